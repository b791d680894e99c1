/// The error of an operation that did not finish within its time limit.
public struct TimeoutError: Error, CustomStringConvertible, Equatable, Sendable {
    public init() {}
    public var description: String { "The operation timed out." }
}

/// Runs an operation against a time limit on a clock: whichever ends first decides the value.
///
/// The continuation is resumed exactly once, by the operation, by the time limit, by `cancel()`
/// or by the cancellation of the awaiting task; then the operation is cancelled and the time
/// limit forgotten. The operation's own error is passed on unchanged (only the time limit
/// produces `TimeoutError`).
public actor TimeoutTask<Success: Sendable> {
    public let timeout: Duration
    private let clock: any TimerClock
    private let operation: @Sendable () async throws -> Success

    private var continuation: CheckedContinuation<Success, any Error>?
    private var running: (operation: Task<Void, Never>, limit: TimerTicket)?
    /// The outcome once decided; a second `value` gets the same outcome.
    private var outcome: Result<Success, any Error>?

    public init(timeout: Duration, clock: any TimerClock = DeadlineTimer.shared,
                operation: @escaping @Sendable () async throws -> Success) {
        self.timeout = timeout
        self.clock = clock
        self.operation = operation
    }

    /// Starts the race (once) and waits for its outcome.
    public var value: Success {
        get async throws {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    start(continuation)
                }
            } onCancel: {
                Task { await self.cancel() }
            }
        }
    }

    /// Ends the race with `CancellationError` unless it is already decided.
    public func cancel() {
        finish(.failure(CancellationError()))
    }

    private func start(_ continuation: CheckedContinuation<Success, any Error>) {
        if let outcome {
            continuation.resume(with: outcome)
            return
        }
        guard self.continuation == nil, running == nil else {
            continuation.resume(throwing: TimeoutTaskReuse())
            return
        }
        self.continuation = continuation
        let operation = self.operation
        let task = Task {
            let result: Result<Success, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            self.finish(result)
        }
        let limit = clock.schedule(after: timeout) { Task { await self.finish(.failure(TimeoutError())) } }
        running = (task, limit)
    }

    private func finish(_ result: Result<Success, any Error>) {
        guard outcome == nil else { return }
        outcome = result
        if let running {
            running.operation.cancel()
            clock.cancel(running.limit)
        }
        continuation?.resume(with: result)
        continuation = nil
    }
}

/// `value` awaited by two tasks at once: a programming error, reported instead of trapping.
struct TimeoutTaskReuse: Error, CustomStringConvertible {
    var description: String { "TimeoutTask.value is already awaited by another task" }
}

/// Awaits `operation`, throwing `TimeoutError` (and cancelling it) after `limit` on `clock`.
public func withTimeout<T: Sendable>(
    _ limit: Duration, clock: any TimerClock = DeadlineTimer.shared, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await TimeoutTask(timeout: limit, clock: clock, operation: operation).value
}
