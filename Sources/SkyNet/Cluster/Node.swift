
/// A node: serves scans to peers over TCP on its own `LocalSystem`.
///
/// The accept loop hands each connection to a `NodeSession`; a session's failure never takes
/// the node down. Connections beyond `maxConnections` get a `busy` error and are closed.
public final class Node: Sendable {
    public struct Options: Sendable {
        /// The name peers see; empty: `node-PORT` with the real port.
        public var name: String
        public var host = "127.0.0.1"
        public var port = 0
        public var capacity = 4
        public var failingEvery = 10
        /// When set, a hello must carry this token.
        public var token: String?
        public var maxConnections = 256
        /// A connection that has not said hello by then is closed.
        public var helloTimeout: Duration = .seconds(10)
        public var maxRequestsPerConnection = 1024
        /// Log every task (never the token).
        public var verbose = false
        public var limits = Connection.Limits()

        public init(name: String) {
            self.name = name
        }
    }

    public let options: Options
    public let system: LocalSystem
    private let listener: Listener
    private let sessions = Locked<[ObjectIdentifier: NodeSession]>([:])
    private let stopping = Locked(false)
    private let log: @Sendable (String) -> Void

    /// The address the node accepts connections on (the real port when 0 was asked for).
    public var host: String { listener.host }
    public var port: Int { listener.port }

    /// Binds, starts accepting, and returns the running node.
    public static func start(_ options: Options, log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Node {
        Socket.ignoreBrokenPipes()
        let listener = try await Listener.bind(host: options.host, port: options.port)
        let node = Node(options: options, listener: listener, log: log)
        listener.start { [node] socket, peer in node.accept(socket, peer: peer) }
        return node
    }

    private init(options: Options, listener: Listener, log: @escaping @Sendable (String) -> Void) {
        var options = options
        if options.name.isEmpty { options.name = "node-\(listener.port)" }
        self.options = options
        self.listener = listener
        self.log = log
        system = LocalSystem(name: options.name, capacity: options.capacity,
                             api: UnreliableAPI(failingEvery: options.failingEvery))
    }

    /// How many connections are open.
    public var connectionCount: Int { sessions.withLock { $0.count } }

    private func accept(_ socket: Socket, peer: String) {
        let connection = Connection(socket: socket, peer: peer, limits: options.limits)
        let context = NodeContext(system: system, options: options, log: log, stopping: stopping)
        let session = NodeSession(connection: connection, context: context) { [weak self] session in
            _ = self?.sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) }
        }
        let admitted = sessions.withLock { sessions -> Bool in
            guard sessions.count < options.maxConnections else { return false }
            sessions[ObjectIdentifier(session)] = session
            return true
        }
        guard admitted else {
            log("[Node] Refused \(peer): already \(options.maxConnections) connections")
            try? connection.send(WireError(code: "busy", message: "too many connections").line)
            connection.close()
            return
        }
        session.start()
    }

    /// Stops accepting, lets running scans finish for up to `grace`, then closes every
    /// connection (cancelling what still runs).
    public func stop(grace: Duration = .seconds(10)) async {
        stopping.withLock { $0 = true }
        listener.stop()
        await listener.stopped.value
        let system = self.system
        _ = try? await withTimeout(grace) { await system.waitUntilIdle() }
        let open = sessions.withLock { Array($0.values) }
        for session in open { session.connection.close() }
        for session in open { _ = await session.connection.closed.value }
    }
}
