/// Runs a list of scan tasks over the systems of a registry.
///
/// One throwing task group holds every running task and the coordinator's requests for free
/// slots. Each task goes to the first system with a free slot; a failed attempt runs again on
/// the local system (on any system when the local one has no slots) until `maxAttempts`.
/// Tasks are started only when a slot is reserved for them, so memory stays bounded by the
/// slots, not by the number of tasks.
public struct Coordinator: Sendable {
    public let systems: Systems
    public let maxAttempts: Int
    private let onEvent: @Sendable (ScanEvent) async -> Void

    /// - Parameter onEvent: called for each event, one at a time, in order. It may suspend (an
    ///   output that is full): the scan then waits for it, holding no thread.
    public init(systems: Systems, maxAttempts: Int = 5, onEvent: @escaping @Sendable (ScanEvent) async -> Void = { _ in }) {
        self.systems = systems
        self.maxAttempts = max(1, maxAttempts)
        self.onEvent = onEvent
    }

    /// Runs every task to completion or to its last attempt.
    ///
    /// Cancelling the calling task stops the scan: no new attempt starts, running ones are
    /// cancelled (remote ones on their nodes too), results that still arrive are kept, and the
    /// report says `interrupted`.
    public func run(_ tasks: [ScanTask]) async -> ScanReport {
        let clock = ContinuousClock()
        let start = clock.now
        var report = ScanReport(taskCount: tasks.count)
        var queue = WorkQueue(taskCount: tasks.count, rerunOnLocal: await systems.localCapacity > 0)

        await withThrowingTaskGroup(of: Step.self) { group in
            while !Task.isCancelled {
                // Use every slot that is free right now, then park one request per kind of
                // work still waiting, so a freed slot or a joining peer wakes us.
                while let (job, reservation) = await queue.takeFreeSlot(from: systems, tasks: tasks) {
                    await launch(job, on: reservation, in: &group)
                }
                while let kind = queue.slotRequestToPark() {
                    group.addTask { [systems] in
                        let reservation = kind == .local
                            ? try await systems.localSystem() : try await systems.firstAvailableSystem()
                        return .slot(reservation, kind)
                    }
                }
                // Only parked slot requests throw, and only when the scan is cancelled.
                guard let step = try? await group.next() else { break }
                switch step {
                case .slot(let reservation, let kind):
                    if !Task.isCancelled, let job = queue.job(for: reservation, requestedAs: kind, tasks: tasks) {
                        await launch(job, on: reservation, in: &group)
                    } else {
                        await systems.release(reservation)
                    }
                case .finished(let job, let reservation, let result, let seconds):
                    await systems.release(reservation)
                    await record(job, system: reservation.system, result: result, seconds: seconds, in: &report, queue: &queue)
                }
            }
            guard Task.isCancelled else { return }
            report.interrupted = true
            group.cancelAll()
            await drain(&group, into: &report, queue: &queue)
        }
        report.seconds = (clock.now - start).seconds
        return report
    }

    /// After cancellation: waits for every child, keeping results that still arrive.
    private func drain(_ group: inout ThrowingTaskGroup<Step, any Error>, into report: inout ScanReport, queue: inout WorkQueue) async {
        while !group.isEmpty {
            let step: Step?
            do { step = try await group.next() } catch { continue }  // a cancelled slot request
            switch step {
            case .finished(let job, let reservation, .success(let value), let seconds)?:
                await systems.release(reservation)
                await record(job, system: reservation.system, result: .success(value), seconds: seconds, in: &report, queue: &queue)
            case .slot(let reservation, _)?:
                await systems.release(reservation)
            case .finished(_, let reservation, _, _)?:
                await systems.release(reservation)  // a cancelled attempt: the task counts as not run
            case nil:
                return
            }
        }
    }

    private func launch(_ job: Job, on reservation: Reservation, in group: inout ThrowingTaskGroup<Step, any Error>) async {
        let system = reservation.system
        await onEvent(.started(job.task, system: system.name, isLocal: system.isLocal, attempt: job.attempt))
        group.addTask { await attempt(job, on: reservation) }
    }

    private func attempt(_ job: Job, on reservation: Reservation) async -> Step {
        let started = ContinuousClock.now
        let result: Result<String, any Error>
        do { result = .success(try await reservation.system.run(job.task)) } catch { result = .failure(error) }
        let seconds = (ContinuousClock.now - started).seconds
        switch result {
        case .failure(is PeerDisconnected):
            await systems.retire(reservation)  // gone: no other task should be handed to it
        case .failure(let failure as ScanFailure) where failure.code == "busy":
            // Someone else fills that system: keep its slot a moment so the re-run goes elsewhere.
            try? await Task.sleep(for: Self.busyCoolDown)
        default:
            break
        }
        // The slot is released by the loop when it takes this step: so no more children live
        // than there are slots, however far the loop falls behind.
        return .finished(job, reservation, result, seconds)
    }

    /// How long a system that answered `busy` gets no task from this slot.
    static let busyCoolDown: Duration = .milliseconds(100)
    /// How often a task may meet a `busy` system before that counts as a failed attempt.
    static let maxBusyBounces = 50

    private func record(
        _ job: Job, system: any ScanSystem, result: Result<String, any Error>, seconds: Double,
        in report: inout ScanReport, queue: inout WorkQueue
    ) async {
        if job.attempt > 1 || job.busyBounces > 0 { report.systems[system.name, default: SystemTally()].reruns += 1 }
        switch result {
        case .success(let value):
            report.results[job.index] = value
            report.systems[system.name, default: SystemTally()].completed += 1
            report.systems[system.name, default: SystemTally()].busySeconds += seconds
            await onEvent(.completed(job.task, result: value, system: system.name, isLocal: system.isLocal,
                               attempt: job.attempt, seconds: seconds))
        case .failure where Task.isCancelled:
            break  // stopped, not failed: the task counts as not run
        case .failure(let failure as ScanFailure) where failure.code == "busy" && job.busyBounces < Self.maxBusyBounces:
            // The system could not take it: not an attempt at the task, so it costs none.
            report.systems[system.name, default: SystemTally()].failed += 1
            report.reruns += 1
            queue.rerun(Job(index: job.index, task: job.task, attempt: job.attempt, busyBounces: job.busyBounces + 1))
            await onEvent(.rerun(job.task, attempt: job.attempt, system: system.name, error: failure))
        case .failure(let error) where job.attempt < maxAttempts:
            report.systems[system.name, default: SystemTally()].failed += 1
            report.reruns += 1
            queue.rerun(Job(index: job.index, task: job.task, attempt: job.attempt + 1, busyBounces: job.busyBounces))
            await onEvent(.rerun(job.task, attempt: job.attempt, system: system.name, error: error))
        case .failure(let error):
            report.systems[system.name, default: SystemTally()].failed += 1
            report.gaveUp.append(job.task)
            await onEvent(.gaveUp(job.task, attempts: job.attempt, error: error))
        }
    }
}

/// One attempt at one task: its position in the list and which try this is (from 1).
struct Job: Sendable {
    let index: Int
    let task: ScanTask
    let attempt: Int
    /// How often the task met a system that was full (`busy`); bounded, costs no attempt.
    var busyBounces = 0
}

/// What a child of the coordinator's task group reports back.
enum Step: Sendable {
    case slot(Reservation, SlotKind)
    case finished(Job, Reservation, Result<String, any Error>, Double)
}

/// Which slots a parked request waits for: local ones (for re-runs) or any.
enum SlotKind: Sendable { case local, any }

