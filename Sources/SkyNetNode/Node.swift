import SkyNetActors
import SkyNetAuth
import SkyNetMetrics
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransfer
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// A node: serves scans to peers over TCP on its own `LocalSystem`, or to the one peer at
/// the other end of a given connection (`serve`, for `skynet node --stdio`).
///
/// The accept loop hands each connection to a `NodeSession`; a session's failure never takes
/// the node down. Connections owing their hello, and those in the token handshake, live on
/// budgets of their own (`Node+Admission.swift`); a client beyond `maxConnections` is
/// answered `busy` and closed. A sweeper closes connections that missed their hello deadline
/// and clients that have been silent for `idleTimeout`.
public final class Node: Sendable {
    /// Whether the node takes new work (`Node+Drain.swift`).
    package enum Phase: Sendable, Equatable {
        /// Serving: new tasks are taken.
        case accepting
        /// `drain` began: no new tasks; running ones may finish until the drain timeout.
        case draining
        /// The drain ended: connections closed.
        case stopped
    }

    /// The most actor calls one connection runs at once: each holds its arguments (up to a
    /// line's 1 MiB, parsed) until it ends.
    static let maxCallsPerConnection = ActorCall.maxCallsPerConnection

    /// What a node serves and how much of it: its name, address, slots and jobs.
    public struct Options: Sendable {
        /// The name peers see; empty: `node-PORT` with the real port.
        public var name: String
        /// The address to listen on (`0.0.0.0` or `::` for every interface).
        public var host = "127.0.0.1"
        /// The port to listen on; 0: a free port, which `Node.port` tells once started.
        public var port = 0
        /// At most this many tasks run at once; more get `busy`.
        public var capacity = 4
        /// The built-in scan fails every N-th task (0: never); other jobs never fail on purpose.
        package var failingEvery = 10
        /// The jobs the node runs: the built-in scan (failing as `failingEvery` says) and what
        /// its operator or program registered. The welcome lists them.
        public var jobs = JobRegistry()
        /// When set, a client must prove it knows this token (docs/PROTOCOL.md, "Authentication").
        public var token: String?
        /// The distributed actors a client may call (`call`); nil: none, every call is refused
        /// `actor-not-found`.
        public var actors: ClusterActorSystem?
        /// How refusals to an address that keeps failing to log in are slowed.
        package var loginBackoff = LoginBackoff()
        /// The most clients that completed their hello, served at once.
        package var maxConnections = 256
        /// The most connections that have not said a valid hello yet; a newer one pushes out
        /// one of them (never a connection in its handshake).
        package var maxPendingConnections = 64
        /// The most connections that sent a valid hello and are in the token handshake (or
        /// waiting out a login slowdown); a newer one pushes out one of them.
        package var maxHandshakes = 64
        /// The most connections from one address in each of those two budgets; a newer one
        /// pushes out its own address's oldest.
        package var maxPendingPerAddress = 16
        /// A connection that has not said hello by then is closed.
        package var helloTimeout: Duration = .seconds(3)
        /// A client that has sent nothing (not even a ping) for this long while none of its
        /// scans runs is closed: its host may have died without closing the connection.
        package var idleTimeout: Duration = .seconds(60)
        package var maxRequestsPerConnection = Request.maxInFlightPerConnection
        /// The most bytes of call and spawn lines the node holds in flight over all its
        /// connections: each call keeps its arguments, parsed, until its reply has left (and
        /// a reply that waits for room counts too), and a window of 1 MiB lines on each of
        /// hundreds of connections would hold gigabytes. Past it, `busy`.
        package var maxCallBytes = 64 << 20
        /// Log every task (never the token).
        package var verbose = false
        /// How long a drain (SIGTERM) lets running tasks finish before it cancels them.
        package var drainTimeout: Duration = .seconds(30)
        /// Log each client's `Connected`/`Disconnected`. A node over stdio leaves it off: its
        /// one client is the coordinator, to whose terminal every line of its log goes.
        package var logsConnections = true
        /// Where the node makes its work root (`skynet-node-<pid>-XXXXXX/`, `WorkRoot`) on its
        /// first file request: an absolute directory; nil for `$TMPDIR`, else `/tmp`.
        package var workDir: String?
        /// The largest file the node takes (a transfer's input, a basefile), its welcome's
        /// `files.max_file_size`. A returned file is bounded by its request's `max_return_size`.
        package var maxFileSize: Int64 = 1 << 30
        /// Whether the node takes file work (`transfer`, `basefile`): false (`--no-files`), its
        /// welcome offers no `files`, and a coordinator sends it none.
        package var acceptsFiles = true
        /// The bytes free on the file system of the work root: `fstatvfs`, unless a test
        /// injects what it wants the node to see.
        package var freeSpace: @Sendable (DirectoryHandle) throws -> Int64 = { try $0.freeBytes() }
        package var limits: Connection.Limits = {
            var limits = Connection.Limits()
            // Back pressure: a client that does not read its replies is not read from either.
            limits.pauseReadingAbove = 1 << 20
            return limits
        }()

        /// The defaults: loopback, a free port, 4 slots, the built-in scan only.
        public init(name: String) {
            self.name = name
        }
    }

    package let options: Options
    package let system: LocalSystem
    /// None for a node serving one given connection (`serve`).
    private let listener: Listener?
    let admission = Locked(Admission())
    /// The Noise pre-shared key the token gives (derived once).
    let linkKey: LinkKey?
    let logins: Locked<LoginFailures>
    /// Requests started and not yet answered, over all connections; closed by `stop`.
    let pending = InFlight()
    /// The bytes of the call and spawn lines in flight, and of replies waiting for room
    /// (`Options.maxCallBytes`).
    let callBytes = Locked(0)
    /// Accepting, draining or stopped; changed only by `drain` (`Node+Drain.swift`).
    /// With the instant a drain cancels what still runs (the `draining` line says how far off).
    let phaseState: Locked<(phase: Phase, cancelAt: ContinuousClock.Instant)>
    /// The work root, free space and uploads of the files that travel with tasks.
    let files: NodeFiles
    /// Tasks answered by job and outcome, and their times (`/metrics`, `Node+Metrics.swift`).
    package let taskMetrics: TaskMetrics
    /// What keeps the node's time: the sweeper, hello and idle bounds, tasks' deadlines.
    let clock: any TimerClock
    let log: @Sendable (String) -> Void

    /// The address the node accepts connections on (the real port when 0 was asked for);
    /// `stdio` and 0 for a node without a listener.
    public var host: String { listener?.host ?? "stdio" }

    /// The port it listens on (the real one when `Options.port` was 0).
    public var port: Int { listener?.port ?? 0 }

    /// Whether this node serves the one client of its stdin and stdout (`serve`): an ssh
    /// channel, which guarantees the bytes' integrity itself.
    var servesStdio: Bool { listener == nil }

    /// Binds, starts accepting, and returns the running node.
    ///
    /// `log` is called on the event loops' threads (accepts, connections, and the scans of
    /// jobs that only wait) and on tasks of the cooperative pool: it must return at once and
    /// never block (no `write` to a pipe or terminal that may be full), or one reader that
    /// stopped reading stderr stops the node.
    /// The CLI offers lines to a bounded queue and drops (and counts) what does not fit.
    public static func start(_ options: Options, log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Node {
        try await start(options, clock: DeadlineTimer.shared, log: log)
    }

    /// `start(_:log:)`, keeping every bound of the node (hello, idle, task deadlines) on `clock`.
    package static func start(_ options: Options, clock: any TimerClock,
                              log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Node {
        Socket.ignoreBrokenPipes()
        let listener = try await Listener.bind(host: options.host, port: options.port)
        let node = Node(options: options, listener: listener, clock: clock, log: log)
        try listener.start(onAccept: { [node] socket, peer in node.accept(socket, peer: peer) },
                       onFailure: { error in log("[Node] Cannot accept connections: \(error)") })
        node.startSweeper()
        if node.offersFiles { node.files.sweepLeftovers() }
        return node
    }

    init(options: Options, listener: Listener?, clock: any TimerClock, log: @escaping @Sendable (String) -> Void) {
        var options = options
        if options.name.isEmpty { options.name = listener.map { "node-\($0.port)" } ?? "node-stdio" }
        self.options = options
        self.listener = listener
        self.clock = clock
        self.log = log
        phaseState = Locked((.accepting, clock.now))
        linkKey = options.token.map { LinkKey(token: Array($0.utf8)) }
        files = NodeFiles(node: options.name, parent: options.workDir, probe: options.freeSpace)
        logins = Locked(LoginFailures(backoff: options.loginBackoff))
        // As many may wait in line as run: a client that keeps each slot's next scan waiting
        // here hides its round trip, and a scan waits at most for one slot to free.
        system = LocalSystem(name: options.name, capacity: options.capacity, queue: options.capacity,
                             jobs: options.jobs.replacingScan(api: UnreliableAPI(failingEvery: options.failingEvery)), clock: clock)
        taskMetrics = TaskMetrics(jobs: system.jobs.names)
    }

    /// How many connections are open (with and without hello).
    package var connectionCount: Int { admission.withLock { $0.pending.count + $0.greeted.count } }

    /// Whether `stop` has begun: new scans are refused.
    package var isStopping: Bool { pending.isClosed }

    /// Whether the node takes new work, drains, or has stopped draining.
    package var phase: Phase { phaseState.withLock { $0.phase } }

    /// What a refused request is told once the node stops taking work.
    var stoppingMessage: String { "\(options.name) is \(phase == .accepting ? "stopping" : "draining")" }

    private func accept(_ socket: Socket, peer: String) {
        serve(Connection(socket: socket, peer: peer, limits: options.limits))
    }

    /// Serves one client's connection (not started yet): it owes its hello like any other.
    func serve(_ connection: Connection) {
        let session = NodeSession(connection: connection, node: self)
        admitPending(session)
        // A connection accepted while a drain began is told too (the drain may have missed it).
        let (phase, cancelAt) = phaseState.withLock { ($0.phase, $0.cancelAt) }
        if phase != .accepting { session.tellDraining(timeout: max(0, (cancelAt - clock.now).seconds.rounded(.up))) }
        session.start()
    }

    /// How often the sweeper looks: a connection outstays its hello or idle bound by a
    /// quarter of it at most.
    private var sweepTick: Duration { min(.seconds(1), options.helloTimeout / 4, options.idleTimeout / 4) }

    func startSweeper() {
        NodeSweeper.shared.add(self, every: sweepTick)
    }

    /// Stops accepting, lets running scans finish for up to `grace`, then closes every
    /// connection (cancelling what still runs).
    public func stop(grace: Duration = .seconds(10)) async {
        pending.close()
        await system.refuseWaiting(stoppingMessage)  // the grace is for the running ones
        if let listener {
            listener.stop()
            await listener.stopped.value
        }
        // Every started request answered, not only the system idle: a slot is free a moment
        // before its reply is sent.
        let pending = self.pending
        _ = try? await withTimeout(grace) { await pending.waitUntilNone() }
        NodeSweeper.shared.remove(self, every: sweepTick)
        let open = admission.withLock { Array($0.pending.values.map(\.session)) + Array($0.greeted.values) }
        for session in open { session.connection.close() }
        for session in open { _ = await session.connection.closed.value }
        // After the connections: their tasks' directories are inside.
        await removeWorkRoot()
    }
}

extension Node {
    /// Whether the node takes file work: it was not told `--no-files`, and it runs a job other
    /// than the built-in scan (which reads no file). Its welcome offers `files` then.
    var offersFiles: Bool {
        options.acceptsFiles && system.jobs.summaries.keys.contains { $0 != JobRegistry.scan }
    }

    /// Removes the work root on the blocking pool (a large tree takes time), awaited.
    func removeWorkRoot() async {
        let files = self.files
        _ = try? await onBlockingPool { files.remove() }
    }
}

extension Node {
    /// A node that serves the one client at the other end of `connection` (not started yet):
    /// `skynet node --stdio`, whose connection is its own stdin and stdout under an SSH login.
    ///
    /// No listener exists and no token is asked for (`options.token` is ignored): the login
    /// that started the process is the authority, and its stdin is the only source of bytes.
    /// The client still owes its hello, and the sweeper still closes it after the idle bound
    /// (a coordinator pings an idle link well within it). When the connection ends, its scans
    /// are cancelled as on any connection; `connection.closed` tells the caller to `stop`.
    package static func serve(_ connection: Connection, options: Options, clock: any TimerClock = DeadlineTimer.shared,
                             log: @escaping @Sendable (String) -> Void = { _ in }) -> Node {
        Socket.ignoreBrokenPipes()
        var options = options
        options.token = nil
        let node = Node(options: options, listener: nil, clock: clock, log: log)
        node.serve(connection)
        node.startSweeper()
        if node.offersFiles { node.files.sweepLeftovers() }
        return node
    }
}
