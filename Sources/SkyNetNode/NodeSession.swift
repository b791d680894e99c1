import SkyNetAuth
import SkyNetLink
import SkyNetMetrics
import SkyNetRuntime
import SkyNetTransfer
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// One client's connection to a node: the handshake, then requests until it closes.
///
/// Lines are handled on the connection's reader thread: pings are answered there at once;
/// each scan runs in a task of its own on the node's system (so the capacity is counted over
/// all connections). The state the reader thread, the scan tasks and the node's sweeper share
/// is one `State` behind a lock (`Locked`).
final class NodeSession: Sendable {
    enum Phase {
        /// Waiting for the hello.
        case greeting
        /// The hello was refused: the lines that came with it are dropped.
        case refused
        /// Serving the client that said hello.
        case serving(client: String)
    }

    struct State {
        var phase = Phase.greeting
        var scans: [Int: Task<Void, Never>] = [:]
        /// How many of `scans` are actor calls (`Node.maxCallsPerConnection`).
        var calls = 0
        /// The client's own actor system, named in its hello, once the node's can call it.
        var callerActors: CallerActors?
        /// The node's calls of the client's actors awaiting their answer, by the id the node gave.
        var callsToCaller: [Int: CallToCaller] = [:]
        var lastCallToCaller = 0
        /// Files being received, by request id (a transfer's input, a basefile).
        var uploads: [Int: NodeUpload] = [:]
        /// When the client was last heard from, or a scan of it last ended.
        var lastActivity: ContinuousClock.Instant
        /// Call replies waiting for room in the queue to the client, and the bytes the client
        /// had taken when it last took any while some waited (`closeIfStalled`).
        var waitingReplies = 0
        var sendProgress: (sent: UInt64, at: ContinuousClock.Instant)
        /// Whether the welcome went out: a `draining` line may follow it (`NodeSession+Drain.swift`).
        var welcomed = false
        /// The client's `draining` line: none yet, owed once welcomed (with its timeout), or sent.
        var drainNotice = DrainNotice.none
    }

    let connection: Connection
    /// The node it serves for: its system, settings, log, budgets and clock.
    let node: Node
    let state: Locked<State>
    /// The connection's directory and basefiles on the node.
    let files: SessionFiles
    /// Sends the files this connection returns (its thread starts with the first).
    let pump: FilePump

    init(connection: Connection, node: Node) {
        self.connection = connection
        self.node = node
        state = Locked(State(lastActivity: node.clock.now, sendProgress: (0, node.clock.now)))
        files = SessionFiles(files: node.files)
        pump = FilePump(connection: connection)
    }

    func start() {
        connection.start(onEvent: { [self] in handle($0) }, onClose: { [self] in ended($0) })
    }

    /// Closes the connection if the client has been silent for `bound` with no scan running.
    /// Uploads that stalled for `bound` fail first.
    func closeIfIdle(now: ContinuousClock.Instant, bound: Duration) {
        failStalledUploads(now: now, bound: bound)
        let client: String? = state.withLock { state in
            guard case .serving(let client) = state.phase, state.scans.isEmpty, state.uploads.isEmpty, now - state.lastActivity >= bound else { return nil }
            return client
        }
        guard let client else { return }
        node.log("[Node] Closing \(client) from \(connection.peer): nothing received for \(String(cFormat: "%g", bound.seconds)) s")
        connection.close()
    }

    private func handle(_ event: Connection.Event) {
        let now = node.clock.now
        let phase = state.withLock { state in
            state.lastActivity = now
            return state.phase
        }
        switch (phase, event) {
        case (.refused, _):
            return
        case (_, .lineTooLong):
            let limit = node.options.limits.maxLineBytes
            send(WireError(code: .frameTooLarge, message: "a line may hold at most \(limit) bytes").line)
        case (.greeting, .line(let line)):
            greet(line)
        case (.serving, .line(let line)):
            do throws(WireError) {
                // A binary message (a file's chunk) only on a framed link: on a line link a line
                // that starts with 0x00 is not JSON.
                guard line.first != 0 || connection.isFramed else {
                    throw .badRequest("a message is a JSON object (a binary one only on an encrypted link)")
                }
                try serve(Request.decode(line), bytes: line.count)
            } catch {
                endUpload(error.id)
                send(error.line)
            }
        }
    }

    /// The first line must be a good hello: anything else is answered and the connection closed.
    ///
    /// With a token, the hello must carry the first message of the Noise handshake; the client
    /// is served once it opens (`login`), on encrypted frames from the welcome on. A hello that
    /// offers the token as version 1 did (in plain text, or the hmac-sha256 handshake) is
    /// refused, naming the version needed: a token link is always encrypted. A network that
    /// keeps failing waits before its hello is answered at all (`LoginFailures`).
    private func greet(_ line: Data) {
        let hello: (version: Int, name: String, noise: [UInt8]?, files: Int?, offersOldToken: Bool)
        do {
            guard case .hello(let version, let name, let noise, let actors, let files, let offersOldToken) = try Request.decode(line) else {
                return refuse(WireError(code: .helloRequired, message: "the first message must be a hello"))
            }
            hello = (version, name, noise, files, offersOldToken)
            state.withLock { $0.callerActors = actors.map { CallerActors(system: $0) } }
        } catch {
            let saysHello = (try? WireFields(line).type()) == "hello"
            return refuse(saysHello ? WireError.badRequest(error.message ?? "malformed hello")
                                    : WireError(code: .helloRequired, message: "the first message must be a hello"))
        }
        guard (1...wireVersion).contains(hello.version) else {
            return refuse(WireError(code: .unsupportedVersion, message: "this node speaks versions 1 to \(wireVersion)"))
        }
        let client = hello.name.isEmpty ? "client" : hello.name
        guard node.linkKey != nil else { return welcome(client, version: hello.version, files: hello.files) }
        if hello.offersOldToken {
            // Refused beside a handshake too: a client that sends the token in the clear has
            // leaked it, and must hear so. Not a guess (the token is not looked at), so not a
            // failed login either.
            return refuse(WireError(code: .unsupportedVersion, message: "this node takes the token only on an encrypted link: "
                                        + "send a version \(WireAuth.encryptedVersion) hello with a Noise handshake, and no \"token\", "
                                        + "\"auth\" or \"nonce\" (the token in plain text and the hmac-sha256 handshake of version 1 are refused)"))
        }
        guard let noise = hello.noise else {
            return refuseLogin("this node requires the token: send a version \(WireAuth.encryptedVersion) hello with a Noise handshake")
        }
        // The connection's reading waits out a slowdown, right token or wrong: what the client
        // sends meanwhile stays in order, and nothing of it runs elsewhere.
        let wait = node.logins.withLock { $0.delay(for: Socket.address(of: connection.peer), now: .now) }
        node.admitHandshake(self, held: wait)
        guard wait != .zero else { return login(noise: noise) }
        connection.holdReading(for: wait) { [self] open in
            if open { login(noise: noise) }
        }
    }

    /// Reads the first message of the Noise handshake: it opens only with the node's token, and
    /// its payload is the hello that counts (its name and actor system).
    private func login(noise message: [UInt8]) {
        guard let key = node.linkKey else { return }
        var handshake = key.responder()
        guard let payload = try? handshake.readMessage(message) else {
            return refuseLogin("wrong token (the handshake does not open)")
        }
        let inner: Request
        do { inner = try Request.decode(Data(payload)) } catch {
            // A hello whose field is wrong says which (as a clear hello's refusal does).
            return refuse(WireError.badRequest("the handshake's hello: \(error.message ?? "malformed")"))
        }
        guard case .hello(WireAuth.encryptedVersion, let name, nil, let actors, let files, false) = inner else {
            return refuse(WireError.badRequest("the handshake must carry a version \(WireAuth.encryptedVersion) hello, without \"noise\" or a token"))
        }
        state.withLock { $0.callerActors = actors.map { CallerActors(system: $0) } }
        welcome(name.isEmpty ? "client" : name, version: WireAuth.encryptedVersion, files: files, handshake: handshake)
    }

    /// Serves the client, if the node has room; after a `handshake`, on encrypted frames: the
    /// welcome is the payload of the handshake's answer, and every later message a frame.
    ///
    /// Files go at the version the client asked for (`files`) only where the link itself
    /// guarantees integrity (encrypted, or the ssh channel of `--stdio`, which version 2 then
    /// frames); on a plain TCP link each file keeps its digest (version 1).
    private func welcome(_ client: String, version: Int, files asked: Int?, handshake: NoiseHandshake? = nil) {
        switch node.admitGreeted(self) {
        case true?: break
        case false?: return refuse(WireError(code: .busy, message: "too many connections (at most \(node.options.maxConnections))"))
        case nil: return  // pushed out of the hello budget meanwhile: closing
        }
        let linkChecks = handshake != nil || node.servesStdio
        let fileVersion = node.offersFiles ? min(asked ?? 1, linkChecks ? FileSupport.currentVersion : 1) : 1
        let files = FileSupport(version: fileVersion, maxFileSize: node.options.maxFileSize)
        // Version 2 over stdio frames the link too (in clear: ssh's channel is the cipher), so
        // that chunks go as raw bytes there as well.
        let framesInClear = handshake == nil && fileVersion >= 2
        // Both ways of version 2 are framed: encrypted, or in clear below.
        pump.use(files.format(framed: true))
        let welcome = Reply.welcome(version: version, name: node.options.name, capacity: node.system.capacity, queue: node.system.queue,
                                    jobs: node.system.jobs.summaries, idle: node.options.idleTimeout.seconds,
                                    files: node.offersFiles ? files : nil,
                                    actors: node.options.actors.map { ActorOffer(system: $0.name, build: $0.registry.build) }).line
        if var handshake {
            // The answer's ephemeral key must give a shared secret: one of small order does
            // not, and only a holder of the token could have sent it.
            guard let answer = try? handshake.writeMessage(payload: Array(welcome.dropLast())), let ciphers = try? handshake.split() else {
                return refuse(WireError.badRequest("the handshake's ephemeral key gives no shared secret"))
            }
            state.withLock { $0.phase = .serving(client: client) }
            send(Reply.handshake(noise: answer).line)
            connection.encrypt(with: ciphers)
        } else {
            state.withLock { $0.phase = .serving(client: client) }
            send(welcome)
            if framesInClear { connection.frameInClear() }
        }
        if node.options.logsConnections { node.log("[Node] Connected: \(client) from \(connection.peer)\(handshake == nil ? "" : " (encrypted)")") }
        welcomeSent()
        linkCallerActors()
    }

    private func refuse(_ error: WireError, log: Bool = true) {
        state.withLock { $0.phase = .refused }
        if log { node.log("[Node] Refused \(connection.peer): \(error)") }
        send(error.line)
        connection.close()
    }

    /// Refuses a wrong or missing token, counting a failed login for the address's network and
    /// the node. Once slowed, refusals are summed in the log rather than logged one by one.
    private func refuseLogin(_ message: String) {
        let verdict = node.logins.withLock { $0.record(Socket.address(of: connection.peer), now: .now) }
        for line in verdict.lines { node.log(line) }
        refuse(WireError(code: .unauthorized, message: message), log: verdict.logRefusal)
    }

    func send(_ line: [UInt8]) {
        // A connection that ended takes no more replies; its scans are being cancelled.
        try? connection.send(line)
    }

    private func ended(_ reason: Connection.CloseReason) {
        let (phase, scans) = state.withLock { state in
            defer { state.scans = [:] }
            return (state.phase, state.scans)
        }
        for scan in scans.values { scan.cancel() }
        endCallsToCaller(reason)
        // Files: uploads discarded, returns stopped, and the connection's directory removed once
        // its last task ended (`SessionFiles`).
        discardUploads()
        pump.stop()
        files.connectionEnded()
        // A frame refused is said even where connections are not logged (`--stdio`): it is
        // the only trace of why the link ended.
        var refusedFrame = false
        if case .unauthenticated = reason { refusedFrame = true }
        if case .serving(let client) = phase, node.options.logsConnections || refusedFrame {
            node.log("[Node] Disconnected: \(client) from \(connection.peer) (\(reason))")
        }
        node.forget(self)
    }
}

extension NodeSession {
    /// The one way a task's answer leaves the node: counted in `node.taskMetrics` (by its
    /// job, its outcome, and with `started` its time), then sent. `line` is the reply already
    /// encoded, when the caller has it.
    func sendTaskReply(_ reply: Reply, line: [UInt8]? = nil, job: String, started: ContinuousClock.Instant?) {
        switch reply {
        case .result:
            recordTask(job: job, outcome: .completed, started: started)
        case .failure(_, _, let code, _):
            recordTask(job: job, outcome: TaskMetrics.outcome(of: code), started: started)
        default:
            break
        }
        send(line ?? reply.line)
    }

    /// Counts a task of `job` that ended as `outcome`; a `busy` refusal never ran and is not timed.
    func recordTask(job: String, outcome: TaskMetrics.Outcome, started: ContinuousClock.Instant? = nil) {
        let seconds = outcome == .busy ? nil : started.map { (ContinuousClock.now - $0).seconds }
        node.taskMetrics.record(job: job, outcome: outcome, seconds: seconds)
    }
}
