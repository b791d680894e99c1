import Foundation

/// What every connection of a node shares: its system, its settings and its log.
struct NodeContext: Sendable {
    let system: LocalSystem
    let options: Node.Options
    /// Returns at once, never blocking: it is called on reader threads, the accept thread
    /// and the pool (see `Node.start`).
    let log: @Sendable (String) -> Void
    /// Set when the node stops: new scans are refused with `busy` while running ones finish.
    let stopping: Locked<Bool>
    /// Requests started and not yet answered, over all connections.
    let pending: PendingReplies
    /// Called when a session completed its hello: whether the node has room for one more client.
    let admit: @Sendable (NodeSession) -> Bool
}

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
        /// When the client was last heard from, or a scan of it last ended.
        var lastActivity = ContinuousClock.now
    }

    let connection: Connection
    let context: NodeContext
    let state = Locked(State())
    private let onEnd: @Sendable (NodeSession) -> Void

    init(connection: Connection, context: NodeContext, onEnd: @escaping @Sendable (NodeSession) -> Void) {
        self.connection = connection
        self.context = context
        self.onEnd = onEnd
    }

    func start() {
        connection.start(onEvent: { [self] in handle($0) }, onClose: { [self] in ended($0) })
    }

    /// Closes the connection if the client has been silent for `bound` with no scan running.
    /// Returns whether it did.
    @discardableResult
    func closeIfIdle(now: ContinuousClock.Instant, bound: Duration) -> Bool {
        let client: String? = state.withLock { state in
            guard case .serving(let client) = state.phase, state.scans.isEmpty, now - state.lastActivity >= bound else { return nil }
            return client
        }
        guard let client else { return false }
        context.log("[Node] Closing \(client) from \(connection.peer): nothing received for \(String(format: "%g", bound.seconds)) s")
        connection.close()
        return true
    }

    private func handle(_ event: Connection.Event) {
        let phase = state.withLock { state in
            state.lastActivity = ContinuousClock.now
            return state.phase
        }
        switch (phase, event) {
        case (.refused, _):
            return
        case (_, .lineTooLong):
            let limit = context.options.limits.maxLineBytes
            send(WireError(code: "frame-too-large", message: "a line may hold at most \(limit) bytes").line)
        case (.greeting, .line(let line)):
            greet(line)
        case (.serving, .line(let line)):
            do {
                try serve(Request.decode(line))
            } catch {
                send(error.line)
            }
        }
    }

    /// The first line must be a good hello: anything else is answered and the connection closed.
    private func greet(_ line: Data) {
        let hello: (version: Int, name: String, token: String?)
        do {
            guard case .hello(let version, let name, let token) = try Request.decode(line) else {
                return refuse(WireError(code: "hello-required", message: "the first message must be a hello"))
            }
            hello = (version, name, token)
        } catch {
            let saysHello = (try? WireFields(line).type()) == "hello"
            return refuse(saysHello ? WireError.badRequest(error.message ?? "malformed hello")
                                    : WireError(code: "hello-required", message: "the first message must be a hello"))
        }
        guard hello.version == wireVersion else {
            return refuse(WireError(code: "unsupported-version", message: "this node speaks version \(wireVersion)"))
        }
        if let expected = context.options.token, !constantTimeEqual(hello.token ?? "", expected) {
            return refuse(WireError(code: "unauthorized", message: "wrong or missing token"))
        }
        guard context.admit(self) else {
            return refuse(WireError(code: "busy", message: "too many connections (at most \(context.options.maxConnections))"))
        }
        let client = hello.name.isEmpty ? "client" : hello.name
        state.withLock { $0.phase = .serving(client: client) }
        context.log("[Node] Connected: \(client) from \(connection.peer)")
        send(Reply.welcome(version: wireVersion, name: context.options.name, capacity: context.system.capacity,
                                 jobs: context.system.jobs.summaries, idle: context.options.idleTimeout.seconds).line)
    }

    private func refuse(_ error: WireError) {
        state.withLock { $0.phase = .refused }
        context.log("[Node] Refused \(connection.peer): \(error)")
        send(error.line)
        connection.close()
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
        if case .serving(let client) = phase {
            context.log("[Node] Disconnected: \(client) from \(connection.peer) (\(reason))")
        }
        onEnd(self)
    }
}

/// Compares secrets in time that depends only on their lengths, not on where they differ.
func constantTimeEqual(_ given: String, _ expected: String) -> Bool {
    let given = Array(given.utf8), expected = Array(expected.utf8)
    var difference = UInt8(given.count == expected.count ? 0 : 1)
    for index in expected.indices {
        difference |= expected[index] ^ (index < given.count ? given[index] : 0)
    }
    return difference == 0
}
