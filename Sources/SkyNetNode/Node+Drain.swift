import SkyNetRuntime
import SkyNetWire

extension Node {
    /// How long cancelled tasks get to reply once a drain's timeout ran out: a job's kill grace
    /// (2 s) and its reply.
    static let cancelledReplyBound: Duration = .seconds(5)
    /// How long the drain's end waits for its last lines (`draining`, replies) to leave.
    static let lastLinesBound: Duration = .seconds(1)

    /// Drains the node: takes no new work, tells every client (`draining`, also one
    /// that connects meanwhile), lets running tasks finish for up to `timeout`, then cancels the
    /// rest (each replies `failure cancelled`, so its coordinator re-runs it elsewhere at once),
    /// stops accepting and closes every connection. A second call returns at once.
    package func drain(within timeout: Duration) async {
        let seconds = max(0, timeout.seconds)
        let cancelAt = clock.now + .seconds(seconds)
        let first = phaseState.withLock { state -> Bool in
            guard state.phase == .accepting else { return false }
            state = (.draining, cancelAt)
            return true
        }
        guard first else { return }
        // New requests are refused from here on: `busy "NAME is draining"`.
        pending.close()
        let sessions = admission.withLock { Array($0.greeted.values) + $0.pending.values.map(\.session) }
        // Sessions in their handshake are told right after their welcome.
        for session in sessions { session.tellDraining(timeout: seconds) }
        // Scans waiting for a slot would wait out the drain: told after `draining`, their
        // coordinators run them elsewhere at once.
        await system.refuseWaiting(stoppingMessage)
        // The listener stays open until the end: a client that connects meanwhile (`skynet
        // status`, a coordinator redialling) is welcomed, told at once, and given no work.
        let pending = self.pending
        _ = try? await withTimeout(timeout, clock: clock) { await pending.waitUntilNone() }
        let open = admission.withLock { Array($0.greeted.values) }
        for session in open { session.cancelAll() }
        _ = try? await withTimeout(Self.cancelledReplyBound, clock: clock) { await pending.waitUntilNone() }
        await letLastLinesLeave(within: Self.lastLinesBound)
        await stop(grace: .zero)
        phaseState.withLock { $0.phase = .stopped }
    }

    /// Waits, at most `bound`, until every client has been sent its `draining` line (a client
    /// welcomed a moment ago is sent it by its reader thread right after the welcome) and every
    /// connection's queue is empty: closing a connection drops what is still queued, and a
    /// coordinator that missed `draining` would count the lost link as a failure. A short poll on
    /// the node's clock: a connection offers no signal for an empty queue.
    private func letLastLinesLeave(within bound: Duration) async {
        let deadline = clock.now + bound
        while clock.now < deadline {
            let sessions = admission.withLock { Array($0.greeted.values) }
            guard sessions.contains(where: { !$0.hasSentItsLastLines }) else { return }
            try? await clock.sleep(for: .milliseconds(10))
        }
    }
}
