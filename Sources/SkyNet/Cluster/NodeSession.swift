import Foundation

/// What every connection of a node shares: its system, its settings and its log.
struct NodeContext: Sendable {
    let system: LocalSystem
    let options: Node.Options
    let log: @Sendable (String) -> Void
    /// Set when the node stops: new scans are refused with `busy` while running ones finish.
    let stopping: Locked<Bool>
}

/// One client's connection to a node: the handshake, then requests until it closes.
///
/// Lines are handled on the connection's reader thread; each scan runs in a task of its own
/// on the node's system (so the capacity is counted over all connections). The state the
/// reader thread and the scan tasks share is guarded by a lock (`Locked`).
final class NodeSession: Sendable {
    private struct State {
        var client: String?
        /// The hello was refused: the lines that came with it are dropped.
        var refused = false
        var scans: [Int: Task<Void, Never>] = [:]
        var helloTimer: Task<Void, Never>?
    }

    let connection: Connection
    private let context: NodeContext
    private let state = Locked(State())
    private let onEnd: @Sendable (NodeSession) -> Void

    init(connection: Connection, context: NodeContext, onEnd: @escaping @Sendable (NodeSession) -> Void) {
        self.connection = connection
        self.context = context
        self.onEnd = onEnd
    }

    func start() {
        connection.start(onEvent: { [self] in handle($0) }, onClose: { [self] in ended($0) })
        let limit = context.options.helloTimeout
        let timer = Task { [connection] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            connection.close()
        }
        let greeted = state.withLock { state -> Bool in
            if state.client == nil { state.helloTimer = timer }
            return state.client != nil
        }
        if greeted { timer.cancel() }
    }

    private func handle(_ event: Connection.Event) {
        guard !state.withLock({ $0.refused }) else { return }
        switch event {
        case .lineTooLong:
            let limit = context.options.limits.maxLineBytes
            send(WireError(code: "frame-too-large", message: "a line may hold at most \(limit) bytes").line)
        case .line(let line):
            if state.withLock({ $0.client }) == nil {
                greet(line)
            } else {
                do {
                    try serve(Request.decode(line))
                } catch {
                    send(error.line)
                }
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
        let client = hello.name.isEmpty ? "client" : hello.name
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.client = client
            defer { state.helloTimer = nil }
            return state.helloTimer
        }
        timer?.cancel()
        context.log("[Node] Connected: \(client) from \(connection.peer)")
        send(Reply.welcome(version: wireVersion, name: context.options.name, capacity: context.system.capacity).line)
    }

    private func refuse(_ error: WireError) {
        state.withLock { $0.refused = true }
        context.log("[Node] Refused \(connection.peer): \(error)")
        send(error.line)
        connection.close()
    }

    private func serve(_ request: Request) {
        switch request {
        case .hello:
            send(WireError.badRequest("already greeted").line)
        case .scan(let id, let task):
            startScan(id: id, task: task)
        case .cancel(let id):
            state.withLock { $0.scans[id] }?.cancel()
        case .ping(let id):
            if state.withLock({ $0.scans[id] != nil }) {
                return send(WireError.badRequest("request id \(id) is already in flight", id: id).line)
            }
            let system = context.system, name = context.options.name
            Task {
                let counters = await system.counters
                self.send(Reply.pong(id: id, Pong(
                    name: name, running: counters.running, capacity: system.capacity,
                    completed: counters.completed, failed: counters.failed)).line)
            }
        }
    }

    private func startScan(id: Int, task: ScanTask) {
        let busy = { (message: String) in Reply.failure(id: id, task: task.id, code: "busy", message: message).line }
        let refusal: [UInt8]? = state.withLock { state in
            guard state.scans[id] == nil else { return WireError.badRequest("request id \(id) is already in flight", id: id).line }
            guard !context.stopping.withLock({ $0 }) else { return busy("\(context.options.name) is stopping") }
            guard state.scans.count < context.options.maxRequestsPerConnection else {
                return busy("too many requests in flight on this connection")
            }
            state.scans[id] = Task { await self.runScan(id: id, task: task) }
            return nil
        }
        if let refusal { send(refusal) }
    }

    private func runScan(id: Int, task: ScanTask) async {
        let started = ContinuousClock.now
        let reply: Reply
        do {
            let result = try await context.system.run(task)
            reply = .result(id: id, task: task.id, result: result)
        } catch let failure as ScanFailure {
            reply = .failure(id: id, task: task.id, code: failure.code, message: failure.message)
        } catch is CancellationError {
            reply = .failure(id: id, task: task.id, code: "cancelled", message: "cancelled")
        } catch {
            reply = .failure(id: id, task: task.id, code: "task-failed", message: "\(error)")
        }
        // Forget the id before replying: the client may reuse it as soon as it has the reply.
        let client = state.withLock { state in
            state.scans.removeValue(forKey: id)
            return state.client ?? "client"
        }
        send(reply.line)
        if context.options.verbose {
            let seconds = (ContinuousClock.now - started).seconds
            let outcome: String
            switch reply {
            case .result: outcome = "completed"
            case .failure(_, _, let code, let message): outcome = "\(code): \(message)"
            default: outcome = "answered"
            }
            context.log("[Node] Task \(task.input) from \(client): \(outcome) in \(String(format: "%.3f", seconds)) s")
        }
    }

    private func send(_ line: [UInt8]) {
        // A connection that ended takes no more replies; its scans are being cancelled.
        try? connection.send(line)
    }

    private func ended(_ reason: Connection.CloseReason) {
        let (client, scans, timer) = state.withLock { state in
            defer { state.scans = [:] }
            return (state.client, state.scans, state.helloTimer)
        }
        timer?.cancel()
        for scan in scans.values { scan.cancel() }
        if let client { context.log("[Node] Disconnected: \(client) from \(connection.peer) (\(reason))") }
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
