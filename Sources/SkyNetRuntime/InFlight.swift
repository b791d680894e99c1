/// Work begun and not yet ended, behind a gate that `close()` shuts to new work. A stopping
/// node waits for the requests it started, not only for its system to be idle, since a task's
/// slot is given back a moment before its reply is sent (and closing then would lose the
/// reply); stopped `PeerLinks` wait for their reports under way.
package final class InFlight: Sendable {
    package init() {}

    private struct State {
        var closed = false
        var count = 0
        var waiters: [AsyncSignal<Void>] = []
    }

    private let state = Locked(State())

    /// Whether `close()` was called.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Counts one more unless closed; returns whether it did.
    package func begin() -> Bool {
        state.withLock { state in
            if !state.closed { state.count += 1 }
            return !state.closed
        }
    }

    package func end() {
        let waiters = state.withLock { state -> [AsyncSignal<Void>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.fulfil(()) }
    }

    /// Lets nothing more begin.
    package func close() { state.withLock { $0.closed = true } }

    /// Returns once everything begun has ended (at once when nothing is in flight).
    package func waitUntilNone() async {
        let signal = AsyncSignal<Void>()
        let none = state.withLock { state in
            if state.count == 0 { return true }
            state.waiters.append(signal)
            return false
        }
        if !none { await signal.value }
    }
}
