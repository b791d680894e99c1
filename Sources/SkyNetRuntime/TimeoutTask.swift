/// The error of an operation that did not finish within its time limit.
public struct TimeoutError: Error, CustomStringConvertible, Equatable, Sendable {
    public init() {}
    public var description: String { "The operation timed out." }
}

/// Runs an operation against a timer: whichever finishes first decides the value.
///
/// The continuation is resumed exactly once, by the winner, by `cancel()` or by the
/// cancellation of the awaiting task; the loser is cancelled. The operation's own error is
/// passed on unchanged (only the timer produces `TimeoutError`).
public actor TimeoutTask<Success: Sendable> {
    public let timeout: Duration
    private let operation: @Sendable () async throws -> Success

    private var continuation: CheckedContinuation<Success, any Error>?
    private var racers: [Task<Void, Never>] = []
    /// The outcome once decided; a second `value` gets the same outcome.
    private var outcome: Result<Success, any Error>?

    public init(timeout: Duration, operation: @escaping @Sendable () async throws -> Success) {
        self.timeout = timeout
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
        guard self.continuation == nil, racers.isEmpty else {
            continuation.resume(throwing: TimeoutTaskReuse())
            return
        }
        self.continuation = continuation
        let operation = self.operation
        let timeout = self.timeout
        racers = [
            Task {
                let result: Result<Success, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                self.finish(result)
            },
            Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                self.finish(.failure(TimeoutError()))
            },
        ]
    }

    private func finish(_ result: Result<Success, any Error>) {
        guard outcome == nil else { return }
        outcome = result
        for racer in racers { racer.cancel() }
        continuation?.resume(with: result)
        continuation = nil
    }
}

/// `value` awaited by two tasks at once: a programming error, reported instead of trapping.
struct TimeoutTaskReuse: Error, CustomStringConvertible {
    var description: String { "TimeoutTask.value is already awaited by another task" }
}

/// Awaits `operation`, throwing `TimeoutError` (and cancelling it) after `limit`.
public func withTimeout<T: Sendable>(
    _ limit: Duration, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await TimeoutTask(timeout: limit, operation: operation).value
}
