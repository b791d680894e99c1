import SkyNetAuth
import SkyNetLink
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire

/// The coordinator's side of the hello: routes the reader thread's events to the handshake
/// until the welcome, then to the peer.
///
/// With a token the hello carries a nonce; the node answers with a challenge (its nonce), the
/// coordinator sends its proof, and the node's welcome must come sealed with the key only the
/// token yields: that is the node's proof. From then on every line in both directions is
/// authenticated (docs/PROTOCOL.md). A welcome without a challenge or without a good seal
/// ends the handshake with `PeerUnauthenticated`: a node that cannot prove the token never
/// gets an input.
final class Handshake: Sendable {
    private enum Route {
        /// Waiting for the node's challenge (with a token) or welcome (without).
        case greeting
        /// Our proof went out: the welcome must open with `receiving`.
        case proved(SessionKeys)
        case peer(PeerConnection)
        case ended(Connection.CloseReason)
    }

    private let route = Locked(Route.greeting)
    private let name: String
    private let connection: Connection
    private let token: HMACSHA256?
    private let clock: any TimerClock
    /// The hello line as sent, without its newline: the start of the transcript.
    let hello: [UInt8]
    /// The peer, made in the step that read its welcome (so no later line can miss it), or why not.
    let welcomed = AsyncSignal<Result<PeerConnection, any Error>>()

    /// The handshake with `name` over `connection`: with a token, the hello asks for a challenge.
    /// `actors`: the name of our actor system, whose actors the node's may call back.
    init(name: String, connection: Connection, token: HMACSHA256?, clock: any TimerClock, actors: String? = nil) {
        self.name = name
        self.connection = connection
        self.token = token
        self.clock = clock
        let nonce = token == nil ? nil : Secrets.randomBytes(WireAuth.nonceCount)
        hello = Array(Request.hello(version: wireVersion, name: "coordinator", nonce: nonce, actors: actors).line.dropLast())
    }

    func deliver(_ event: Connection.Event) {
        let current = route.withLock { $0 }
        if case .peer(let peer) = current { return peer.deliver(event) }
        switch (current, event) {
        case (.greeting, .line(let line)): greeted(line)
        case (.proved(let keys), .line(let line)): welcomed(line, keys: keys)
        // Said here: the close that follows reads only as the end of the connection.
        case (.greeting, .lineTooLong), (.proved, .lineTooLong):
            finish(.failure(HandshakeLineTooLong(peer: name, maxBytes: connection.limits.maxLineBytes)))
        case (.peer, _), (.ended, _): return
        }
    }

    /// The node's first answer: a challenge (with a token), a welcome (without) or a refusal.
    private func greeted(_ line: Data) {
        switch Result(catching: { try Reply.decode(line) }) {
        case .success(.challenge(let nonce)):
            guard let token else {
                return finish(.failure(WireError.badRequest("a challenge, though this coordinator sent no nonce")))
            }
            let transcript = AuthTranscript(hello: hello, nodeNonce: nonce)
            route.withLock { if case .greeting = $0 { $0 = .proved(transcript.sessionKeys(token: token, as: .coordinator)) } }
            do {
                try connection.send(Request.auth(proof: transcript.coordinatorProof(token: token)).line)
            } catch {
                finish(.failure(PeerDisconnected(peer: name, reason: "closed during the handshake")))
            }
        case .success(.welcome(let version, let name, let capacity, let jobs, let idle, let files, let actors)):
            guard token == nil else { return finish(.failure(PeerUnauthenticated(peer: self.name, reason: "it does not know the token"))) }
            if let refusal = Self.refusal(version: version, capacity: capacity) { return finish(.failure(refusal)) }
            finish(.success(.init(name: name, capacity: capacity, jobs: jobs, idleSeconds: idle, files: files, actors: actors)))
        case .success(.error(let error as any Error)):
            finish(.failure(error))
        case .failure(let error):
            // A JSON object with a type is the protocol, malformed: the node's fault, not what a
            // login's start-up files printed.
            if let type = try? WireFields(line).type() {
                return finish(.failure(WireError.badRequest("a malformed \(type): \((error as? WireError)?.message ?? "\(error)")")))
            }
            finish(.failure(NotTheProtocol(firstLine: String(decoding: line.prefix(120), as: UTF8.self), error: error)))
        case .success(let other):
            finish(.failure(WireError.badRequest("expected a \(token == nil ? "welcome" : "challenge"), got \(other)")))
        }
    }

    /// After our proof: a welcome sealed with the node's key (its proof), or a plain refusal.
    private func welcomed(_ line: Data, keys: SessionKeys) {
        var receiving = LineSeal(key: keys.receiving)
        switch receiving.open(line) {
        case .success(let opened):
            guard case .welcome(let version, let name, let capacity, let jobs, let idle, let files, let actors)? = try? Reply.decode(opened) else {
                return finish(.failure(WireError.badRequest("expected a welcome after the proof")))
            }
            if let refusal = Self.refusal(version: version, capacity: capacity) { return finish(.failure(refusal)) }
            connection.authenticate(sending: LineSeal(key: keys.sending), receiving: receiving)
            finish(.success(.init(name: name, capacity: capacity, jobs: jobs, idleSeconds: idle, files: files, actors: actors)))
        case .failure(let rejection):
            if rejection == .missing, case .error(let error)? = try? Reply.decode(line) { return finish(.failure(error)) }
            finish(.failure(PeerUnauthenticated(peer: name, reason: "it does not know the token")))
        }
    }

    /// Why a welcome cannot be used: another protocol version than our hello's (a node
    /// answers in the version it was asked), or no slot at all (a scan would wait on it for ever).
    static func refusal(version: Int, capacity: Int) -> WireError? {
        if version != wireVersion { return .badRequest("a welcome of protocol version \(version) to a version \(wireVersion) hello") }
        if capacity < 1 { return .badRequest("a welcome with capacity \(capacity): a node has at least one slot") }
        return nil
    }

    /// Ends the handshake. A welcome makes the peer, and routes every later line to it, before
    /// the next line is read; a failure closes the connection (nothing more is read from it).
    private func finish(_ result: Result<PeerConnection.Welcome, any Error>) {
        switch result {
        case .success(let welcome):
            let peer = PeerConnection(name: name, welcome: welcome, connection: connection, clock: clock)
            let ended: Connection.CloseReason? = route.withLock { route in
                if case .ended(let reason) = route { return reason }
                route = .peer(peer)
                return nil
            }
            if let ended { peer.end(ended) }
            welcomed.fulfil(.success(peer))
        case .failure(let error):
            route.withLock { if case .ended = $0 {} else { $0 = .ended(.closedLocally) } }
            connection.close()
            welcomed.fulfil(.failure(error))
        }
    }

    func fail(_ reason: Connection.CloseReason) {
        let previous = route.withLock { route in
            defer { route = .ended(reason) }
            return route
        }
        if case .peer(let peer) = previous { peer.end(reason) }
        welcomed.fulfil(.failure(PeerDisconnected(peer: name, reason: reason.description)))
    }
}
