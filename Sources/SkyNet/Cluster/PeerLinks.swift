/// Keeps a connection to every peer of a cluster file and keeps `Systems` in step with them.
///
/// Each peer has a task of its own that connects and says hello in the background, adds the
/// peer to the registry when it is welcomed, removes it when it disconnects, and tries again
/// with backoff: a peer that is down is reported once, and joins when it comes up.
public final class PeerLinks: Sendable {
    public struct Settings: Sendable {
        /// Slots per peer unless the cluster file says otherwise.
        public var capacity: Int
        /// Bound of each remote request, and of connecting.
        public var timeout: Duration
        public var token: String?
        /// Backoff between attempts to reach a peer that is down.
        public var retryDelays: (first: Duration, most: Duration) = (.milliseconds(100), .seconds(2))

        public init(capacity: Int = 4, timeout: Duration = .seconds(5), token: String? = nil) {
            self.capacity = capacity
            self.timeout = timeout
            self.token = token
        }
    }

    private let tasks: [Task<Void, Never>]
    private let stopped = Locked(false)

    /// Starts linking to every node of `cluster`.
    public init(cluster: ClusterConfig, systems: Systems, settings: Settings, log: @escaping @Sendable (ClusterEvent) async -> Void) {
        let stopped = self.stopped
        let log: @Sendable (ClusterEvent) async -> Void = { event in
            if !stopped.withLock({ $0 }) { await log(event) }
        }
        tasks = cluster.nodes.map { node in
            Task { await Self.link(node, capacity: node.capacity ?? cluster.capacity ?? settings.capacity,
                                   systems: systems, settings: settings, log: log) }
        }
    }

    /// Stops every link: open connections close, and no link reports anything after this
    /// returns. A connect in progress ends on its own (within the timeout), unawaited.
    public func stop() {
        stopped.withLock { $0 = true }
        for task in tasks { task.cancel() }
    }

    private static func link(
        _ node: ClusterConfig.Node, capacity: Int, systems: Systems, settings: Settings,
        log: @escaping @Sendable (ClusterEvent) async -> Void
    ) async {
        var delay = settings.retryDelays.first
        var reportedDown = false
        while !Task.isCancelled {
            let peer: PeerConnection
            do {
                peer = try await PeerConnection.open(name: node.name, host: node.host, port: node.port,
                                                     token: settings.token, timeout: settings.timeout)
            } catch {
                if Task.isCancelled { return }
                if !reportedDown {
                    await log(.unreachable(node.name, address: "\(node.host):\(node.port)", error: "\(error)"))
                    reportedDown = true
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, settings.retryDelays.most)
                continue
            }
            reportedDown = false
            delay = settings.retryDelays.first
            let slots = min(capacity, peer.welcome.capacity)
            let remote = RemoteSystem(name: node.name, peer: peer, timeout: settings.timeout) { responsive in
                await systems.setSuspended(!responsive, named: node.name)
                await log(responsive ? .responsive(node.name) : .unresponsive(node.name))
            }
            await systems.add(remote, capacity: slots)
            await log(.connected(node.name))
            let reason = await withTaskCancellationHandler {
                await peer.closed.value
            } onCancel: {
                peer.close()
            }
            await systems.remove(named: node.name)
            if Task.isCancelled { return }
            await log(.disconnected(node.name, reason: reason.description))
        }
    }
}
