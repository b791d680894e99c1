import SkyNetMetrics
import SkyNetRuntime
import SkyNetWork

extension Coordinator {
    func launch(_ work: Attempt, on reservation: Reservation, with helpers: ScanHelpers) async {
        begin(work, on: reservation, with: helpers)
        await onEvent(started(work, on: reservation))
    }

    /// Starts an attempt without its event: the attempt goes first, so its request is on its
    /// way while events are handled. Its `completed` can only come after, from the loop.
    ///
    /// On a peer (`RequestingSystem`) the attempt is its request and a callback, with no task
    /// of its own: a task would cost its frames (about 5 KiB, 40,000 at once in W15) and
    /// its switches. Any other attempt is a task, run where its system prefers (a peer's
    /// transfer on the event loop of its link). The scan's own loop (`run`) stays on the pool:
    /// on an event loop it would hold that loop's links back.
    func begin(_ work: Attempt, on reservation: Reservation, with helpers: ScanHelpers) {
        if let system = reservation.system as? any RequestingSystem,
           helpers.start({ report in request(work, on: reservation, of: system, report: report) }) {
            return
        }
        helpers.start(on: reservation.system.preferredExecutor) { await attempt(work, on: reservation) }
    }

    /// Starts `work` on a peer's reservation; its outcome is reported as `attempt` returns it.
    private func request(_ work: Attempt, on reservation: Reservation, of system: any RequestingSystem,
                         report: @escaping @Sendable (Step) -> Void) -> (any StartedAttempt)? {
        let started = ContinuousClock.now
        let (systems, maxResultBytes) = (self.systems, self.maxResultBytes)
        return system.start(work.task) { outcome in
            let result = Self.kept(outcome, atMost: maxResultBytes)
            let seconds = (ContinuousClock.now - started).seconds
            guard Self.systemIsGone(after: result) else { return report(.finished(work, reservation, result, seconds)) }
            Task {
                await systems.retire(reservation)  // gone: no other task should be handed to it
                report(.finished(work, reservation, result, seconds))
            }
        }
    }

    func started(_ work: Attempt, on reservation: Reservation) -> ScanEvent {
        .started(work.task, system: reservation.system.name, isLocal: reservation.system.isLocal, attempt: work.attempt)
    }

    private func attempt(_ work: Attempt, on reservation: Reservation) async -> Step {
        let started = ContinuousClock.now
        let outcome: Result<String, any Error>
        do { outcome = .success(try await reservation.system.run(work.task)) } catch { outcome = .failure(error) }
        let result = Self.kept(outcome, atMost: maxResultBytes)
        let seconds = (ContinuousClock.now - started).seconds
        if Self.systemIsGone(after: result) {
            await systems.retire(reservation)  // gone: no other task should be handed to it
        }
        // The slot is released by the loop when it takes this step: so no more attempts run
        // than there are slots, however far the loop falls behind.
        return .finished(work, reservation, result, seconds)
    }

    /// Whether `result` says its system is gone.
    private static func systemIsGone(after result: Result<String, any Error>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return (error as? any SystemFailure)?.systemIsGone == true
    }

    /// `outcome`, unless it is a result longer than `maxResultBytes`: a node's own
    /// `--max-output` may allow more than this scan keeps.
    private static func kept(_ outcome: Result<String, any Error>, atMost maxResultBytes: Int?) -> Result<String, any Error> {
        guard let maxResultBytes, case .success(let value) = outcome, value.utf8.count > maxResultBytes else { return outcome }
        return .failure(ScanFailure.outputOver(maxResultBytes))
    }

    /// Counts the outcome of an attempt (not a `busy` one) and queues a re-run if it failed;
    /// returns the event that says so (nil for an attempt stopped with the scan).
    func book(
        _ work: Attempt, system: any ScanSystem, result: Result<String, any Error>, seconds: Double,
        in report: inout ScanReport, queue: inout WorkQueue
    ) -> ScanEvent? {
        if work.attempt > 1 { report.systems[system.name, default: SystemTally()].reruns += 1 }
        recordMetrics(work, result: result, seconds: seconds)
        switch result {
        case .success(let value):
            report.systems[system.name, default: SystemTally()].completed += 1
            report.systems[system.name, default: SystemTally()].busySeconds += seconds
            queue.settled(work.task)
            return .completed(work.task, result: value, system: system.name, isLocal: system.isLocal,
                              attempt: work.attempt, seconds: seconds)
        case .failure where Task.isCancelled:
            return nil  // stopped, not failed: the task counts as not run
        case .failure(let error) where work.attempt < maxAttempts && !Self.isFinal(error):
            report.systems[system.name, default: SystemTally()].failed += 1
            report.reruns += 1
            queue.rerun(Attempt(task: work.task, attempt: work.attempt + 1))
            return .rerun(work.task, attempt: work.attempt, system: system.name, error: error)
        case .failure(let error):
            report.systems[system.name, default: SystemTally()].failed += 1
            report.gaveUp += 1
            queue.settled(work.task)
            return .gaveUp(work.task, attempts: work.attempt, system: system.name, seconds: seconds, error: error)
        }
    }
}

extension Coordinator {
    /// Counts an attempt's outcome in `metrics`: one stopped with the scan as `cancelled`.
    func recordMetrics(_ work: Attempt, result: Result<String, any Error>, seconds: Double) {
        guard let metrics else { return }
        let outcome: TaskMetrics.Outcome = switch result {
        case .success: .completed
        case .failure where Task.isCancelled: .cancelled
        case .failure(let error): TaskMetrics.outcome(of: error)
        }
        metrics.record(job: work.task.job, outcome: outcome, seconds: seconds)
    }

    /// Whether running the task again cannot help (the coordinator's own refusal of a path, a
    /// file over its limit): it is given up after this attempt.
    static func isFinal(_ error: any Error) -> Bool {
        (error as? ScanFailure)?.isFinal == true || error is TransferRefusal
    }
}

/// How long a slot rests after its system answered `busy`: exponential in the system's
/// unbroken run of `busy` answers, with jitter so coordinators sharing a node do not come back
/// in step, and bounded. Any other answer from the system ends its run.
struct BusyBackoff {
    let rest: Backoff
    /// Unbroken `busy` answers by system name (bounded by the number of systems).
    var streaks: [String: Int] = [:]

    init(first: Duration = .milliseconds(50), most: Duration = .seconds(2)) {
        rest = Backoff(first: first, most: most, jitter: 0.5)
    }

    /// Counts a `busy` answer from `system` and returns how long the slot rests.
    mutating func bounced(on system: String) -> Duration {
        let streak = min((streaks[system] ?? 0) + 1, 16)
        streaks[system] = streak
        return rest.delay(after: streak)
    }

    /// `system` answered something other than `busy`: its next `busy` starts short again.
    mutating func answered(on system: String) {
        streaks[system] = nil
    }
}
