
/// A value that arrives once, awaited by any number of tasks.
///
/// `fulfil` may be called from any thread (a reader thread, a termination handler); later
/// calls are ignored. The state is guarded by a lock (`Locked`).
package final class AsyncSignal<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>], actions: [@Sendable (Value) -> Void])
        case fulfilled(Value)
    }

    private let state = Locked(State.waiting([], actions: []))

    package init() {}

    /// Delivers the value to every waiter, present and future. Only the first call counts.
    package func fulfil(_ value: Value) {
        let (waiters, actions) = state.withLock { state -> ([CheckedContinuation<Value, Never>], [@Sendable (Value) -> Void]) in
            guard case .waiting(let waiters, let actions) = state else { return ([], []) }
            state = .fulfilled(value)
            return (waiters, actions)
        }
        for action in actions { action(value) }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// Runs `action` with the value when it arrives (at once, here, if it has): on the
    /// thread that fulfils the signal, so it must be quick and must not block.
    package func whenFulfilled(_ action: @escaping @Sendable (Value) -> Void) {
        if let ready = valueOrWait({ _, actions in actions.append(action) }) { action(ready) }
    }

    /// The value, once it has arrived.
    package var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                if let ready = valueOrWait({ waiters, _ in waiters.append(continuation) }) { continuation.resume(returning: ready) }
            }
        }
    }

    /// The value if it has arrived; else nil, and `wait` joins the waiters under the same lock.
    private func valueOrWait(
        _ wait: (inout [CheckedContinuation<Value, Never>], inout [@Sendable (Value) -> Void]) -> Void
    ) -> Value? {
        state.withLock { state in
            switch state {
            case .fulfilled(let value):
                return value
            case .waiting(var waiters, var actions):
                wait(&waiters, &actions)
                state = .waiting(waiters, actions: actions)
                return nil
            }
        }
    }

    /// The value if it has arrived, without waiting.
    package var current: Value? {
        state.withLock { if case .fulfilled(let value) = $0 { value } else { nil } }
    }
}
