import SkyNetMetrics
import SkyNetRuntime
import SkyNetWork

/// Runs scan tasks over the systems of a registry.
///
/// Every running attempt, every request for a free slot and every resting slot is a helper
/// of the scan's `ScanHelpers` (a task, or for an attempt on a peer its request), which
/// reports back to one loop. Each task goes to the first system with a free slot; a failed
/// attempt runs again on the local system (on any system when the local one has no slots)
/// until `maxAttempts`. A
/// `busy` answer is back-pressure, not failure: the task goes back to the queue at no cost and
/// the system that said it gets a slot's rest, longer each time (`BusyBackoff`).
///
/// Tasks are drawn from their source only when a slot is reserved for them, and results leave
/// through events, so memory stays bounded by the slots, not by the number of tasks.
public struct Coordinator: Sendable {
    package let systems: Systems
    package let maxAttempts: Int
    let onEvent: @Sendable (ScanEvent) async -> Void
    /// How long a slot rests after a `busy` answer: from `first`, doubling, up to `most`.
    var busyRest = BusyBackoff()
    /// With a window: a new task starts only while its sector is less than this many past the
    /// oldest sector without an outcome, so output in input order (`--keep-order`) holds at
    /// most this many results. Nil: tasks start as slots free.
    package var orderWindow: Int?
    /// The longest result kept, in UTF-8 bytes (`--max-output`): a longer one fails its attempt,
    /// whichever system sent it, so `orderWindow` results cost at most this much each. Nil: any
    /// result the link carried.
    package var maxResultBytes: Int?
    /// Where each attempt's outcome is counted for `/metrics` (the dashboard's); nil: nowhere.
    package var metrics: TaskMetrics?
    /// What a slot's rest after `busy` is timed by.
    package var clock: any TimerClock

    /// - Parameter onEvent: called for each event, one at a time, in order. It may suspend (an
    ///   output that is full): the scan then waits for it, holding no thread.
    public init(systems: Systems, maxAttempts: Int = 5, onEvent: @escaping @Sendable (ScanEvent) async -> Void = { _ in }) {
        self.systems = systems
        self.maxAttempts = max(1, maxAttempts)
        self.onEvent = onEvent
        clock = DeadlineTimer.shared
    }

    /// Runs every task of `tasks`, each to completion or to its last attempt, on the first free
    /// slot of `systems`, and returns the counts; each outcome goes to `onEvent` as it happens.
    public func run(_ tasks: [ScanTask]) async -> ScanReport {
        await run(tasks, count: tasks.count)
    }

    /// Runs every task to completion or to its last attempt, and returns as soon as each has
    /// its outcome (slot requests still parked are cancelled).
    ///
    /// - Parameters:
    ///   - tasks: the tasks, drawn lazily one at a time as slots free (a lazy sequence of ten
    ///     million tasks costs nothing up front).
    ///   - count: how many tasks `tasks` yields: the report's `total`.
    ///
    /// Cancelling the calling task stops the scan: no new attempt starts, running ones are
    /// cancelled (remote ones on their nodes too), results that still arrive are kept, and the
    /// report says `interrupted`.
    package func run<Tasks: Sequence<ScanTask>>(_ tasks: Tasks, count: Int) async -> ScanReport {
        await run(.iterator(AnyIterator(tasks.makeIterator())), count: count)
    }

    /// Runs every task of a feed, asking it for the next batch as the last one is used up
    /// (see `run(_:count:)`).
    package func run(feed: any TaskFeed, count: Int) async -> ScanReport {
        await run(.feed(feed), count: count)
    }

    private func run(_ source: WorkQueue.Source, count: Int) async -> ScanReport {
        var queue = WorkQueue(source: source, count: count, rerunOnLocal: await systems.localCapacity > 0, orderWindow: orderWindow)
        let start = ContinuousClock.now
        var report = ScanReport(total: count)
        var backoff = busyRest

        let helpers = ScanHelpers()
        await withTaskCancellationHandler {
            while !Task.isCancelled, !(await queue.isDone()) {
                // Use every slot that is free right now, then park one request per kind of
                // work still waiting, so a freed slot or a joining peer wakes us.
                while let (work, reservation) = await queue.takeFreeSlot(from: systems) {
                    await launch(work, on: reservation, with: helpers)
                }
                while let kind = await queue.slotRequestToPark() {
                    helpers.start { [systems] in
                        do { return .slot(try await systems.reserve(localOnly: kind == .local), kind) } catch { return .stopped }
                    }
                }
                guard helpers.outstanding > 0 else { break }
                for step in await helpers.take() {
                    switch step {
                    case .slot(let reservation, let kind):
                        if !Task.isCancelled, let work = await queue.work(for: reservation, requestedAs: kind) {
                            await launch(work, on: reservation, with: helpers)
                        } else {
                            await systems.release(reservation)
                        }
                    case .finished(let work, let reservation, .failure(let failure as ScanFailure), _)
                        where failure.code == .busy && !Task.isCancelled:
                        metrics?.record(job: work.task.job, outcome: .busy, seconds: nil)
                        queue.finished()
                        queue.bounce(work)
                        report.busyBounces += 1
                        report.systems[reservation.name, default: SystemTally()].busy += 1
                        // The slot rests before it is released: that system gets less from us
                        // while it is full, and the task goes to whichever slot frees first.
                        let rest = backoff.bounced(on: reservation.name)
                        helpers.start {
                            try? await clock.sleep(for: rest)
                            return .rested(reservation)
                        }
                    case .finished(let work, let reservation, .failure(let error), let seconds)
                        where (error as? any SystemFailure)?.taskWasGivenBack == true && !Task.isCancelled:
                        // A draining node gave the task back: not a failure, no attempt spent; it
                        // goes to the next free slot at once, and the slot is released with no rest.
                        queue.finished()
                        queue.bounce(work)
                        // Timed like every attempt that ran: the histogram counts what the total does.
                        metrics?.record(job: work.task.job, outcome: .cancelled, seconds: seconds)
                        await systems.release(reservation)
                    case .finished(let work, let reservation, let result, let seconds):
                        queue.finished()
                        backoff.answered(on: reservation.name)
                        let outcome = book(work, system: reservation.system, result: result, seconds: seconds, in: &report, queue: &queue)
                        // The freed slot goes to the next piece of work (a re-run just queued
                        // included) in the same step that gives it back, and that attempt is on its
                        // way before the events are handled, which keep their order.
                        var next: (Attempt, Reservation)?
                        if Task.isCancelled {
                            await systems.release(reservation)
                        } else if let (work, slot) = await queue.takeFreeSlot(from: systems, releasing: reservation) {
                            begin(work, on: slot, with: helpers)
                            next = (work, slot)
                        }
                        if let outcome { await onEvent(outcome) }
                        if let (work, slot) = next { await onEvent(started(work, on: slot)) }
                    case .rested(let reservation):
                        await systems.release(reservation)
                    case .stopped:
                        break
                    }
                }
            }
        } onCancel: {
            helpers.cancelAll()  // running attempts stop (on their nodes too); parked requests end
        }
        report.interrupted = Task.isCancelled
        // Every task has its outcome (or the scan was stopped): what is left are parked slot
        // requests, resting slots and, when stopped, running attempts.
        helpers.cancelAll()
        await drain(helpers, into: &report, queue: &queue)
        // Every system that took part has its row, also one that completed nothing (a scan
        // stopped while each ran its first task).
        for name in await systems.joinedNames where report.systems[name] == nil { report.systems[name] = SystemTally() }
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    /// After the loop: waits for every helper to report, releasing slots and keeping results
    /// that still arrive.
    private func drain(_ helpers: ScanHelpers, into report: inout ScanReport, queue: inout WorkQueue) async {
        while helpers.outstanding > 0 {
            for step in await helpers.take() {
                switch step {
                case .finished(let work, let reservation, .success(let value), let seconds):
                    await systems.release(reservation)
                    if let outcome = book(work, system: reservation.system, result: .success(value), seconds: seconds,
                                          in: &report, queue: &queue) {
                        await onEvent(outcome)
                    }
                case .finished(let work, let reservation, .failure, let seconds):
                    metrics?.record(job: work.task.job, outcome: .cancelled, seconds: seconds)
                    await systems.release(reservation)  // a cancelled attempt's task counts as not run
                case .slot(let reservation, _), .rested(let reservation):
                    await systems.release(reservation)
                case .stopped:
                    break
                }
            }
        }
    }
}

/// What a helper of the scan (`ScanHelpers`) reports back.
enum Step: Sendable {
    case slot(Reservation, SlotKind)
    /// A parked slot request that ended with the scan, with no slot.
    case stopped
    case finished(Attempt, Reservation, Result<String, any Error>, Double)
    /// A slot that rested after a `busy` answer, ready to be released.
    case rested(Reservation)
}
