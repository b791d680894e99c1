@testable import SkyNet
@testable import SkyNetRuntime

/// State that a test changes under a lock and waits on: every change wakes the waits whose
/// condition now holds, so a wait suspends on a signal instead of looking again and again.
///
/// For state the test itself owns (what a fake node received, lines a reader got, log lines).
/// State that only the code under test holds and that offers no signal is awaited with
/// `awaitState`, which polls.
package final class Watched<State: Sendable>: Sendable {
    private struct Waiter {
        let holds: @Sendable (State) -> Bool
        let signal: AsyncSignal<Void>
    }

    private struct Inner {
        var state: State
        var waiters: [Waiter] = []
    }

    private let inner: Locked<Inner>

    package init(_ state: State) {
        inner = Locked(Inner(state: state))
    }

    /// The state now.
    package var value: State { inner.withLock { $0.state } }

    /// Changes the state under the lock, then wakes each wait whose condition now holds.
    @discardableResult
    package func update<R>(_ body: (inout State) -> R) -> R {
        let (result, ready) = inner.withLock { inner -> (R, [AsyncSignal<Void>]) in
            let result = body(&inner.state)
            let state = inner.state
            var ready: [AsyncSignal<Void>] = []
            inner.waiters.removeAll { waiter in
                guard waiter.holds(state) else { return false }
                ready.append(waiter.signal)
                return true
            }
            return (result, ready)
        }
        for signal in ready { signal.fulfil(()) }
        return result
    }

    /// Returns once `condition` holds (at once if it holds now); throws `TimeoutError` after
    /// `limit`. `condition` is asked under the lock, at each change: it must be quick and must
    /// not touch this value.
    ///
    /// The default limit is a hang guard for a state a wrong implementation never reaches, not
    /// a measure of speed (see `awaitState`).
    package func wait(upTo limit: Duration = .seconds(30), until condition: @escaping @Sendable (State) -> Bool) async throws {
        let signal = AsyncSignal<Void>()
        let holds = inner.withLock { inner -> Bool in
            if condition(inner.state) { return true }
            inner.waiters.append(Waiter(holds: condition, signal: signal))
            return false
        }
        if holds { return }
        try await withTimeout(limit) { await signal.value }
    }
}
