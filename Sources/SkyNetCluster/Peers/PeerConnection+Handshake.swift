import SkyNetAuth
import SkyNetLink
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire

/// The coordinator's side of the hello: routes the reader's events to the handshake until the
/// welcome, then to the peer.
///
/// With a token the hello carries the first message of the Noise handshake (`LinkKey`), whose
/// payload is the hello that counts; the node answers with the second, whose payload is its
/// welcome. Only a node that holds the token can open the first or make the second, so a
/// welcome that opens is the node's proof; from then on every message in both directions is an
/// encrypted frame (docs/PROTOCOL.md). A plain welcome, or an answer that does not open, ends
/// the handshake with `PeerUnauthenticated`: a node that cannot prove the token never gets an
/// input.
final class Handshake: Sendable {
    private enum Route {
        /// Waiting for the node's answer: its handshake message (with a token) or welcome.
        case greeting
        case peer(PeerConnection)
        case ended(Connection.CloseReason)
    }

    private let route = Locked(Route.greeting)
    private let name: String
    private let connection: Connection
    /// The initiator's end, once it wrote the first message (nil without a token).
    private let noise: NoiseHandshake?
    private let clock: any TimerClock
    /// The version the hello says, which the welcome must say too.
    private let version: Int
    /// The hello line as sent, without its newline.
    let hello: [UInt8]
    /// The peer, made in the step that read its welcome (so no later line can miss it), or why not.
    let welcomed = AsyncSignal<Result<PeerConnection, any Error>>()

    /// The handshake with `name` over `connection`: with a token, the hello carries the Noise
    /// handshake. `actors`: the name of our actor system, whose actors the node's may call back.
    init(name: String, connection: Connection, key: LinkKey?, clock: any TimerClock, actors: String? = nil) throws {
        self.name = name
        self.connection = connection
        self.clock = clock
        guard let key else {
            noise = nil
            version = 1  // all a hello without a token needs: a node of version 1 serves it too
            hello = Array(Request.hello(version: version, name: "coordinator", actors: actors, files: FileSupport.currentVersion).line.dropLast())
            return
        }
        version = WireAuth.encryptedVersion
        var initiator = key.initiator()
        let inner = Request.hello(version: version, name: "coordinator", actors: actors, files: FileSupport.currentVersion).line.dropLast()
        let message = try initiator.writeMessage(payload: Array(inner))
        noise = initiator
        hello = Array(Request.hello(version: version, name: "", noise: message).line.dropLast())
    }

    func deliver(_ event: Connection.Event) {
        let current = route.withLock { $0 }
        if case .peer(let peer) = current { return peer.deliver(event) }
        switch (current, event) {
        case (.greeting, .line(let line)): greeted(line)
        // Said here: the close that follows reads only as the end of the connection.
        case (.greeting, .lineTooLong):
            finish(.failure(HandshakeLineTooLong(peer: name, maxBytes: connection.limits.maxLineBytes)))
        case (.peer, _), (.ended, _): return
        }
    }

    /// The node's answer: its handshake message (with a token), a welcome (without) or a refusal.
    private func greeted(_ line: Data) {
        switch Result(catching: { try Reply.decode(line) }) {
        case .success(.handshake(let message)):
            guard var noise else {
                return finish(.failure(WireError.badRequest("a handshake, though this coordinator sent none")))
            }
            guard let payload = try? noise.readMessage(message), let ciphers = try? noise.split() else {
                return finish(.failure(PeerUnauthenticated(peer: name, reason: "it does not know the token")))
            }
            guard case .welcome(let version, let name, let capacity, let queue, let jobs, let idle, let files, let actors)? = try? Reply.decode(Data(payload)) else {
                return finish(.failure(WireError.badRequest("the handshake must carry a welcome")))
            }
            if let refusal = refusal(version: version, capacity: capacity) { return finish(.failure(refusal)) }
            connection.encrypt(with: ciphers)
            finish(.success(.init(name: name, capacity: capacity, queue: queue, jobs: jobs, idleSeconds: idle, files: files, actors: actors)))
        case .success(.welcome(let version, let name, let capacity, let queue, let jobs, let idle, let files, let actors)):
            guard noise == nil else { return finish(.failure(PeerUnauthenticated(peer: self.name, reason: "it does not know the token"))) }
            if let refusal = refusal(version: version, capacity: capacity) { return finish(.failure(refusal)) }
            // Files version 2 without a handshake (a node over ssh): frames from here on.
            if let files, files.version >= 2 { connection.frameInClear() }
            finish(.success(.init(name: name, capacity: capacity, queue: queue, jobs: jobs, idleSeconds: idle, files: files, actors: actors)))
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
            finish(.failure(WireError.badRequest("expected a \(noise == nil ? "welcome" : "handshake"), got \(other)")))
        }
    }

    /// Why a welcome cannot be used: another protocol version than our hello's (a node
    /// answers in the version it was asked), or no slot at all (a scan would wait on it for ever).
    private func refusal(version: Int, capacity: Int) -> WireError? {
        if version != self.version { return .badRequest("a welcome of protocol version \(version) to a version \(self.version) hello") }
        if capacity < 1 { return .badRequest("a welcome with capacity \(capacity): a node has at least one slot") }
        return nil
    }

    /// Ends the handshake. A welcome makes the peer, and routes every later line to it, before
    /// the next line is read; a failure ends a handshake still waiting for its welcome and
    /// closes the connection (nothing more is read from it).
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
            // Checked and ended in one step: a welcome read meanwhile (the timer's failure
            // comes from another thread) made the peer, which stays; a close already ended it.
            let waiting = route.withLock { route -> Bool in
                guard case .greeting = route else { return false }
                route = .ended(.closedLocally)
                return true
            }
            guard waiting else { return }
            welcomed.fulfil(.failure(error))  // before the close, whose end would say "disconnected"
            connection.close()
        }
    }

    /// The welcome did not come within its bound: a handshake still waiting for it ends with
    /// `TimeoutError` (its connection closed).
    func timedOut() {
        finish(.failure(TimeoutError()))
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
