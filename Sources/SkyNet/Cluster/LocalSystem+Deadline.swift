extension LocalSystem {
    private enum Outcome: Sendable {
        case finished(String)
        case deadline
    }

    /// Runs `job` for `task`, stopping it at the task's deadline (counted from now on `clock`).
    ///
    /// At the deadline the job's work is cancelled and this waits until it has really ended
    /// (the task group awaits its children), so the caller's slot is never given back while
    /// the work still runs; then it throws `deadline`. Cancelling the caller cancels the job
    /// the same way and throws `CancellationError`.
    static func execute(_ job: any Job, _ task: ScanTask, clock: any TimerClock) async throws -> String {
        let request = task.request(startingAt: clock.now)
        guard let timeout = task.timeout, let deadline = request.deadline else { return try await job.run(request) }
        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask { .finished(try await job.run(request)) }
            group.addTask {
                try await clock.sleep(until: deadline)
                return .deadline
            }
            // The first to end decides; the other is cancelled and awaited before the group returns.
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            if case .deadline = first {
                group.cancelAll()
                // The job's own ending (a CancellationError, most likely) no longer matters.
                while true {
                    do { if try await group.next() == nil { break } } catch {}
                }
            }
            return first
        }
        switch outcome {
        case .finished(let result): return result
        case .deadline: throw ScanFailure.deadline(seconds: timeout)
        }
    }
}

extension ScanFailure {
    /// The system has no job by that name.
    public static func unknownJob(_ job: String, system: String) -> ScanFailure {
        ScanFailure(code: "unknown-job", message: "\(system) has no job '\(job)'")
    }

    /// The task was stopped at its deadline of `seconds`.
    public static func deadline(seconds: Double) -> ScanFailure {
        let text = seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
        return ScanFailure(code: "deadline", message: "stopped at its deadline of \(text) s")
    }
}
