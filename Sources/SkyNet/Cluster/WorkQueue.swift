/// The coordinator's bookkeeping of work not yet started: new tasks in order, and failed
/// attempts waiting to run again. Plain state, owned by the coordinator's loop.
struct WorkQueue {
    private var nextNew = 0
    private let taskCount: Int
    private var reruns: [Job] = []
    private var rerunHead = 0
    /// Re-runs wait for a local slot when the local system has any; else for any slot.
    let rerunOnLocal: Bool
    private var parked: Set<SlotKind> = []

    init(taskCount: Int, rerunOnLocal: Bool) {
        self.taskCount = taskCount
        self.rerunOnLocal = rerunOnLocal
    }

    private var hasNew: Bool { nextNew < taskCount }
    private var hasRerun: Bool { rerunHead < reruns.count }

    mutating func rerun(_ job: Job) {
        reruns.append(job)
    }

    /// Reserves a slot that is free right now for the next piece of work, if both exist.
    mutating func takeFreeSlot(from systems: Systems, tasks: [ScanTask]) async -> (Job, Reservation)? {
        if hasRerun, let reservation = await systems.tryReserve(localOnly: rerunOnLocal) {
            return (popRerun(), reservation)
        }
        if hasNew, let reservation = await systems.tryReserve() {
            return (popNew(tasks), reservation)
        }
        return nil
    }

    /// The kind of slot request to park in the task group, if work waits for that kind of
    /// slot and no request for it is parked yet. Call until it returns nil.
    mutating func slotRequestToPark() -> SlotKind? {
        if hasRerun, rerunOnLocal, !parked.contains(.local) {
            parked.insert(.local)
            return .local
        }
        if hasNew || (hasRerun && !rerunOnLocal), !parked.contains(.any) {
            parked.insert(.any)
            return .any
        }
        return nil
    }

    /// The work to run on a slot that a parked request obtained, or nil to release the slot.
    mutating func job(for reservation: Reservation, requestedAs kind: SlotKind, tasks: [ScanTask]) -> Job? {
        parked.remove(kind)
        if hasRerun, !rerunOnLocal || reservation.system.isLocal { return popRerun() }
        if hasNew { return popNew(tasks) }
        return nil
    }

    private mutating func popNew(_ tasks: [ScanTask]) -> Job {
        defer { nextNew += 1 }
        return Job(index: nextNew, task: tasks[nextNew], attempt: 1)
    }

    private mutating func popRerun() -> Job {
        let job = reruns[rerunHead]
        rerunHead += 1
        if rerunHead > 64, rerunHead * 2 > reruns.count {
            reruns.removeFirst(rerunHead)
            rerunHead = 0
        }
        return job
    }
}
