/// A peer node behind the `ScanSystem` interface: each task is one `scan` request, bounded by
/// a `TimeoutTask`. A request that times out is cancelled on the node.
///
/// A small circuit breaker: after a timeout the peer counts as unresponsive (`onHealth(false)`:
/// the registry holds back new work) and is pinged until it answers (`onHealth(true)`).
public actor RemoteSystem: ScanSystem {
    public nonisolated let name: String
    public nonisolated var isLocal: Bool { false }
    public nonisolated let peer: PeerConnection
    public nonisolated let timeout: Duration
    private let onHealth: @Sendable (_ responsive: Bool) async -> Void
    private var probing = false

    public init(name: String, peer: PeerConnection, timeout: Duration,
                onHealth: @escaping @Sendable (_ responsive: Bool) async -> Void = { _ in }) {
        self.name = name
        self.peer = peer
        self.timeout = timeout
        self.onHealth = onHealth
    }

    /// Nonisolated: it touches no state of the actor but on a timeout, so a request costs no
    /// hop onto the actor.
    public nonisolated func run(_ task: ScanTask) async throws -> String {
        let peer = self.peer
        let id = peer.nextID()
        let reply: Reply
        do {
            reply = try await TimeoutTask(timeout: timeout) {
                try await peer.request(id: id, Request.run(id: id, task: task))
            }.value
        } catch let error as TimeoutError {
            peer.post(.cancel(id: id))
            await startProbing()
            throw error
        } catch is CancellationError {
            peer.post(.cancel(id: id))
            throw CancellationError()
        }
        switch reply {
        case .result(_, _, let result):
            return result
        case .failure(_, _, let code, let message):
            throw ScanFailure(code: code, message: message)
        default:
            throw ScanFailure(code: "bad-reply", message: "\(name) answered a scan with \(reply)")
        }
    }

    /// Marks the peer unresponsive (once) and pings it until it answers or disconnects.
    private func startProbing() {
        guard !probing else { return }
        probing = true
        Task {
            await onHealth(false)
            await probeUntilAnswered()
            probing = false
        }
    }

    private func probeUntilAnswered() async {
        let peer = self.peer, timeout = self.timeout
        while !Task.isCancelled {
            let id = peer.nextID()
            do {
                _ = try await TimeoutTask(timeout: timeout) { try await peer.request(id: id, .ping(id: id)) }.value
                await onHealth(true)
                return
            } catch is PeerDisconnected {
                return  // the link notices and removes the peer
            } catch {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }
}
