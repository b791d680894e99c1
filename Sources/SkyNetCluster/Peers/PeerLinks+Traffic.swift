import SkyNetRuntime
import SkyNetTransport

/// The bytes a coordinator exchanged with its peers (`skynet_bytes_total`): the live links'
/// so far plus those of links that closed, added in the same step that drops a link, so a
/// link is never counted twice or lost and the sum never goes down.
final class PeerTraffic: Sendable {
    private struct State {
        var live: [String: PeerConnection] = [:]
        var closed = ByteTally()
    }

    private let state = Locked(State())

    func linked(_ peer: PeerConnection, named name: String) {
        state.withLock { state in
            if let earlier = state.live.updateValue(peer, forKey: name) { state.closed.add(earlier.connection) }
        }
    }

    func unlinked(named name: String) {
        state.withLock { state in
            if let peer = state.live.removeValue(forKey: name) { state.closed.add(peer.connection) }
        }
    }

    var total: ByteTally {
        state.withLock { $0.closed.adding($0.live.values.map(\.connection)) }
    }
}

extension PeerLinks {
    /// Bytes sent to and received from peers over every link of this scan (ssh links included:
    /// their bytes are what the node over stdio got and sent).
    package var traffic: ByteTally { peerTraffic.total }
}
