import SkyNetRuntime

/// A clock that stands still until a test moves it: `advance(by:)` runs the actions that fall
/// due, in deadline order, each with `now` at its own deadline. Time-keeping code given this
/// clock (a node's sweeper, a request's time limit, a liveness ping loop, a task's deadline)
/// can be tested for the exact order of what happens, without waiting for real time.
package final class ManualClock: TimerClock {
    private struct State {
        var now: ContinuousClock.Instant
        var queue = TimerQueue()
        /// Tasks waiting until an action is pending at `deadline`.
        var waiters: [(deadline: ContinuousClock.Instant, signal: AsyncSignal<Void>)] = []
    }

    private let state: Locked<State>

    /// A clock that reads `start` until it is advanced.
    package init(start: ContinuousClock.Instant = .now) {
        state = Locked(State(now: start))
    }

    package var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// The deadlines of the actions (sleeps included) still pending, earliest first.
    package var pendingDeadlines: [ContinuousClock.Instant] { state.withLock { $0.queue.deadlines } }

    /// A deadline that is not after `now` runs its action at once, on the calling thread.
    @discardableResult
    package func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        let (ticket, ready) = state.withLock { state -> (TimerTicket, [AsyncSignal<Void>]?) in
            let ticket = state.queue.insert(at: deadline, action)
            if deadline <= state.now { return (ticket, nil) }
            defer { state.waiters.removeAll { $0.deadline == deadline } }
            return (ticket, state.waiters.filter { $0.deadline == deadline }.map(\.signal))
        }
        if let ready {
            for signal in ready { signal.fulfil(()) }
        } else {
            advance(by: .zero)
        }
        return ticket
    }

    @discardableResult
    package func cancel(_ ticket: TimerTicket) -> Bool {
        state.withLock { $0.queue.remove(ticket) }
    }

    /// Moves time forward by `duration`, running on the calling thread each action that falls
    /// due on the way (also those that actions schedule), in deadline order, with `now` at its
    /// deadline; then `now` is the target.
    package func advance(by duration: Duration) {
        let target = now + duration
        while let entry = state.withLock({ state -> TimerQueue.Due? in
            guard let entry = state.queue.popFirst(dueAt: target) else {
                state.now = max(state.now, target)
                return nil
            }
            state.now = max(state.now, entry.deadline)
            return entry
        }) {
            entry.action()
        }
    }

    /// Returns once an action is pending at `deadline`: the sleep or time limit a test is about
    /// to move past has begun. (A wrong implementation never gets there: the test's time limit
    /// ends the wait.)
    package func waitUntilPending(at deadline: ContinuousClock.Instant) async {
        let signal = AsyncSignal<Void>()
        let reached = state.withLock { state in
            if state.queue.deadlines.contains(deadline) { return true }
            state.waiters.append((deadline, signal))
            return false
        }
        if !reached { await signal.value }
    }
}
