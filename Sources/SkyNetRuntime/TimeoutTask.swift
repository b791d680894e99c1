/// The error of an operation that did not finish within its time limit.
package struct TimeoutError: Error, CustomStringConvertible, Equatable, Sendable {
    package init() {}
    package var description: String { "The operation timed out." }
}

/// Runs an operation against a time limit on a clock: whichever ends first decides the value.
///
/// The outcome is decided once (the first to fulfil `outcome` wins): by the operation, by the
/// time limit, by `cancel()` or by the cancellation of the awaiting task; then the operation is
/// cancelled and the time limit forgotten. The operation's own error is passed on unchanged
/// (only the time limit produces `TimeoutError`).
package actor TimeoutTask<Success: Sendable> {
    package let timeout: Duration
    private let clock: any TimerClock
    private let operation: @Sendable () async throws -> Success
    /// The outcome once decided; a second `value` gets the same outcome.
    private let outcome = AsyncSignal<Result<Success, any Error>>()
    /// Whether the race runs (a task awaits `value`, and nothing has decided it yet).
    private var awaited = false

    package init(timeout: Duration, clock: any TimerClock = DeadlineTimer.shared,
                operation: @escaping @Sendable () async throws -> Success) {
        self.timeout = timeout
        self.clock = clock
        self.operation = operation
    }

    /// Starts the race (once) and waits for its outcome.
    package var value: Success {
        get async throws {
            try start()
            defer { awaited = false }
            let outcome = self.outcome
            return try await withTaskCancellationHandler {
                await outcome.value
            } onCancel: {
                outcome.fulfil(.failure(CancellationError()))
            }.get()
        }
    }

    /// Ends the race with `CancellationError` unless it is already decided.
    package func cancel() {
        outcome.fulfil(.failure(CancellationError()))
    }

    private func start() throws(TimeoutTaskReuse) {
        guard outcome.current == nil else { return }
        guard !awaited else { throw TimeoutTaskReuse() }
        awaited = true
        let outcome = self.outcome, operation = self.operation
        let task = Task {
            do { outcome.fulfil(.success(try await operation())) } catch { outcome.fulfil(.failure(error)) }
        }
        // The verdict is given on the pool, behind what was queued there first: an operation
        // that was ready before the limit came wins even when the pool was busy meanwhile.
        let limit = clock.schedule(after: timeout) { Task { outcome.fulfil(.failure(TimeoutError())) } }
        outcome.whenFulfilled { [clock] _ in
            task.cancel()
            clock.cancel(limit)
        }
    }
}

/// `value` awaited by two tasks at once: a programming error, reported instead of trapping.
struct TimeoutTaskReuse: Error, CustomStringConvertible {
    var description: String { "TimeoutTask.value is already awaited by another task" }
}

/// Awaits `operation`, throwing `TimeoutError` (and cancelling it) after `limit` on `clock`.
package func withTimeout<T: Sendable>(
    _ limit: Duration, clock: any TimerClock = DeadlineTimer.shared, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await TimeoutTask(timeout: limit, clock: clock, operation: operation).value
}
