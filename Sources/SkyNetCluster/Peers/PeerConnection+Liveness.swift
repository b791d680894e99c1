import SkyNetRuntime
import SkyNetWire

/// A peer that answered no ping within the liveness bound while work was in flight: its
/// pending requests fail with this at once, so their tasks can run elsewhere.
package struct PeerUnresponsive: Error, CustomStringConvertible, Equatable {
    package let peer: String
    package let bound: Duration
    package var description: String { "\(peer) did not answer a ping within \(bound.seconds.asWritten) s" }
}

/// Liveness: one ping loop per link while watched work is pending.
extension PeerConnection {
    /// Whether a liveness loop runs on this link (work sent with a bound is pending).
    var isWatchingLiveness: Bool { state.withLock { $0.liveness != nil } }

    /// Pings, waits up to the bound for the pong, rests a little, and again, while a watched
    /// request is pending. Ends itself when none is (checked under the lock that registers
    /// requests, so a request that comes later starts a new loop) or when the link ends.
    func pingWhileWatched() async {
        while true {
            let bound: Duration? = state.withLock { state in
                guard state.ended == nil, state.pending.values.contains(where: \.isWatched) else {
                    state.liveness = nil
                    return nil
                }
                return state.livenessBound
            }
            guard let bound else { return }
            let id = nextID()
            let before = connection.progress
            do {
                _ = try await withTimeout(bound, clock: clock) { try await self.request(id: id, .ping(id: id)) }
            } catch is TimeoutError {
                // A pong may wait behind a megabyte of file chunks on a slow link: bytes that
                // moved either way meanwhile show a live peer all the same (more than our own
                // pings: a peer that reads nothing takes none once the kernel's buffers are full).
                let after = connection.progress
                if after.received != before.received || after.sent - before.sent > Self.pingsOnly { continue }
                failWork(with: PeerUnresponsive(peer: name, bound: bound))
                continue
            } catch is PeerDisconnected, is CancellationError {
                return  // the link ended
            } catch {
                // Any other answer (an `error` reply) still shows a live peer.
            }
            try? await clock.sleep(for: min(bound / 2, .seconds(1)))
        }
    }

    /// Bytes sent during a bound that are only our pings (an encrypted ping is under 100 bytes).
    static let pingsOnly: UInt64 = 4096

    /// Fails every pending scan and job (not the pings) with `error`.
    private func failWork(with error: PeerUnresponsive) {
        let work = state.withLock { state in
            defer { state.pending = state.pending.filter { !$0.value.isWork } }
            return state.pending.filter { $0.value.isWork }
        }
        for entry in work.values { finish(entry, .failure(error)) }
    }
}

extension Request {
    /// A request that runs a task (as opposed to a ping, a hello or a cancel).
    var isWork: Bool {
        switch self {
        case .scan, .job, .transfer, .call, .spawn: true
        case .hello, .cancel, .ping, .basefile, .chunk, .fileEnd, .lookup, .answer: false
        }
    }
}
