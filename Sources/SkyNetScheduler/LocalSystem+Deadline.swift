import SkyNetRuntime
import SkyNetWork

extension LocalSystem {
    /// Runs `job` for `task` in job slot `slot` and `workingDirectory`, stopping it at the
    /// task's deadline (counted from now on `clock`).
    ///
    /// At the deadline the job's work is cancelled and this waits until it has really ended,
    /// so the caller's slot is never given back while the work still runs; then it throws
    /// `deadline`. Cancelling the caller cancels the job the same way and throws
    /// `CancellationError`.
    static func execute(_ job: any Job, _ task: ScanTask, slot: Int, workingDirectory: String? = nil,
                        clock: any TimerClock) async throws -> String {
        // Made in one step: a `JobRequest` (it holds an `Instant`, of the standard library's
        // resilient layout) is a dynamic allocation in every running task's frame, each copy one more.
        let request = task.request(startingAt: clock.now, slot: slot, workingDirectory: workingDirectory)
        guard let timeout = task.timeout, let deadline = request.deadline else { return try await job.run(request) }
        return try await run(job, request, stoppingAt: deadline, after: timeout, clock: clock)
    }

    /// `execute` for a task with a deadline. Apart: a task without one (W15's 40,000 scans at
    /// once) then keeps none of this in its frame while it runs.
    @inline(never)
    private static func run(_ job: any Job, _ request: JobRequest, stoppingAt deadline: ContinuousClock.Instant,
                            after timeout: Double, clock: any TimerClock) async throws -> String {
        // The first to come decides: the job's end (true) or the deadline (false).
        let ended = AsyncSignal<Bool>()
        let work = Task {
            defer { ended.fulfil(true) }
            return try await job.run(request)
        }
        // Decided on the pool, behind what was queued there first (as `TimeoutTask` does).
        let limit = clock.schedule(at: deadline) {
            Task {
                ended.fulfil(false)
                work.cancel()
            }
        }
        let result = await withTaskCancellationHandler { await work.result } onCancel: { work.cancel() }
        clock.cancel(limit)
        guard ended.current == true else { throw ScanFailure.deadline(seconds: timeout) }
        // A job that finished keeps its result even if the caller was cancelled meanwhile, as
        // without a deadline: a completed result is never thrown away.
        return try result.get()
    }
}

extension ScanFailure {
    /// The task was stopped at its deadline of `seconds`.
    package static func deadline(seconds: Double) -> ScanFailure {
        ScanFailure(code: .deadline, message: "stopped at its deadline of \(seconds.asWritten) s")
    }
}
