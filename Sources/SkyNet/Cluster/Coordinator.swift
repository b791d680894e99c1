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
    private let onEvent: @Sendable (ScanEvent) -> Void

    /// - Parameter onEvent: called for each event, one at a time, in order.
    public init(systems: Systems, maxAttempts: Int = 5, onEvent: @escaping @Sendable (ScanEvent) -> Void = { _ in }) {
        self.systems = systems
        self.maxAttempts = max(1, maxAttempts)
        self.onEvent = onEvent
    }

    /// Runs every task to completion or to its last attempt. Throws only `CancellationError`.
    public func run(_ tasks: [ScanTask]) async throws -> ScanReport {
        let clock = ContinuousClock()
        let start = clock.now
        var report = ScanReport(taskCount: tasks.count)
        var queue = WorkQueue(taskCount: tasks.count, rerunOnLocal: await systems.localCapacity > 0)

        try await withThrowingTaskGroup(of: Step.self) { group in
            while true {
                // Use every slot that is free right now, then park one request per kind of
                // work still waiting, so a freed slot or a joining peer wakes us.
                while let (job, reservation) = await queue.takeFreeSlot(from: systems, tasks: tasks) {
                    group.addTask { await attempt(job, on: reservation) }
                }
                while let kind = queue.slotRequestToPark() {
                    group.addTask { [systems] in
                        let reservation = kind == .local
                            ? try await systems.localSystem() : try await systems.firstAvailableSystem()
                        return .slot(reservation, kind)
                    }
                }
                guard let step = try await group.next() else { break }
                switch step {
                case .slot(let reservation, let kind):
                    if let job = queue.job(for: reservation, requestedAs: kind, tasks: tasks) {
                        group.addTask { await attempt(job, on: reservation) }
                    } else {
                        await systems.release(reservation)
                    }
                case .finished(let job, let system, let result, let seconds):
                    try Task.checkCancellation()
                    record(job, system: system, result: result, seconds: seconds, in: &report, queue: &queue)
                }
            }
        }
        report.seconds = (clock.now - start).seconds
        return report
    }

    private func attempt(_ job: Job, on reservation: Reservation) async -> Step {
        let started = ContinuousClock.now
        let result: Result<String, any Error>
        do { result = .success(try await reservation.system.run(job.task)) } catch { result = .failure(error) }
        await systems.release(reservation)
        return .finished(job, reservation.system, result, (ContinuousClock.now - started).seconds)
    }

    private func record(
        _ job: Job, system: any ScanSystem, result: Result<String, any Error>, seconds: Double,
        in report: inout ScanReport, queue: inout WorkQueue
    ) {
        switch result {
        case .success(let value):
            report.results[job.index] = value
            report.completedBySystem[system.name, default: 0] += 1
            onEvent(.completed(job.task, result: value, system: system.name, isLocal: system.isLocal,
                               attempt: job.attempt, seconds: seconds))
        case .failure(let error) where job.attempt < maxAttempts:
            report.reruns += 1
            queue.rerun(Job(index: job.index, task: job.task, attempt: job.attempt + 1))
            onEvent(.rerun(job.task, attempt: job.attempt, system: system.name, error: error))
        case .failure(let error):
            report.gaveUp.append(job.task)
            onEvent(.gaveUp(job.task, attempts: job.attempt, error: error))
        }
    }
}

/// One attempt at one task: its position in the list and which try this is (from 1).
struct Job: Sendable {
    let index: Int
    let task: ScanTask
    let attempt: Int
}

/// What a child of the coordinator's task group reports back.
enum Step: Sendable {
    case slot(Reservation, SlotKind)
    case finished(Job, any ScanSystem, Result<String, any Error>, Double)
}

/// Which slots a parked request waits for: local ones (for re-runs) or any.
enum SlotKind: Sendable { case local, any }

extension Duration {
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
