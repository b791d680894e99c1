import SkyNetRuntime

/// The requests a node has started and not yet answered, over all its connections: a
/// stopping node waits for these, not only for its system to be idle, since a task's slot is
/// given back a moment before its reply is sent (and closing then would lose the reply).
final class PendingReplies: Sendable {
    private struct State {
        var count = 0
        var waiters: [AsyncSignal<Void>] = []
    }

    private let state = Locked(State())

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let waiters = state.withLock { state -> [AsyncSignal<Void>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.fulfil(()) }
    }

    /// Returns once every started request has been answered (at once when none is pending).
    func waitUntilNone() async {
        let signal = AsyncSignal<Void>()
        let none = state.withLock { state in
            if state.count == 0 { return true }
            state.waiters.append(signal)
            return false
        }
        if !none { await signal.value }
    }
}
