import SkyNetRuntime

/// The bytes a coordinator exchanged with its peers (`skynet_bytes_total`): the live links'
/// so far plus those of links that closed, added in the same step that drops a link, so a
/// link is never counted twice or lost and the sum never goes down.
final class PeerTraffic: Sendable {
    private struct State {
        var live: [String: PeerConnection] = [:]
        var closed: (sent: UInt64, received: UInt64) = (0, 0)

        mutating func add(_ peer: PeerConnection) {
            let progress = peer.connection.progress
            closed.sent &+= progress.sent
            closed.received &+= progress.received
        }
    }

    private let state = Locked(State())

    func linked(_ peer: PeerConnection, named name: String) {
        state.withLock { state in
            if let earlier = state.live.updateValue(peer, forKey: name) { state.add(earlier) }
        }
    }

    func unlinked(named name: String) {
        state.withLock { state in
            if let peer = state.live.removeValue(forKey: name) { state.add(peer) }
        }
    }

    var total: (sent: UInt64, received: UInt64) {
        state.withLock { state in
            var total = state.closed
            for peer in state.live.values {
                let progress = peer.connection.progress
                total.sent &+= progress.sent
                total.received &+= progress.received
            }
            return total
        }
    }
}

extension PeerLinks {
    /// Bytes sent to and received from peers over every link of this scan (ssh links included:
    /// their bytes are what the node over stdio got and sent).
    public var traffic: (sent: UInt64, received: UInt64) { peerTraffic.total }
}
