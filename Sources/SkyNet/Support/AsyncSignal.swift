
/// A value that arrives once, awaited by any number of tasks.
///
/// `fulfil` may be called from any thread (a reader thread, a termination handler); later
/// calls are ignored. The state is guarded by a lock (`Locked`).
public final class AsyncSignal<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case fulfilled(Value)
    }

    private let state = Locked(State.waiting([]))

    public init() {}

    /// Delivers the value to every waiter, present and future. Only the first call counts.
    public func fulfil(_ value: Value) {
        let waiters: [CheckedContinuation<Value, Never>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .fulfilled(value)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value, once it has arrived.
    public var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLock { state in
                    switch state {
                    case .fulfilled(let value):
                        return value
                    case .waiting(var waiters):
                        waiters.append(continuation)
                        state = .waiting(waiters)
                        return nil
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    /// The value if it has arrived, without waiting.
    public var current: Value? {
        state.withLock { if case .fulfilled(let value) = $0 { value } else { nil } }
    }
}
