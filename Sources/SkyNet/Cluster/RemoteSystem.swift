/// A peer node behind the `ScanSystem` interface: each task is one `scan` request, bounded by
/// a `TimeoutTask`. A request that times out is cancelled on the node.
public actor RemoteSystem: ScanSystem {
    public nonisolated let name: String
    public nonisolated var isLocal: Bool { false }
    public let peer: PeerConnection
    public let timeout: Duration

    public init(name: String, peer: PeerConnection, timeout: Duration) {
        self.name = name
        self.peer = peer
        self.timeout = timeout
    }

    public func run(_ task: ScanTask) async throws -> String {
        let peer = self.peer
        let id = peer.nextID()
        let reply: Reply
        do {
            reply = try await TimeoutTask(timeout: timeout) {
                try await peer.request(id: id, .scan(id: id, task: task))
            }.value
        } catch let error as TimeoutError {
            peer.post(.cancel(id: id))
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
}
