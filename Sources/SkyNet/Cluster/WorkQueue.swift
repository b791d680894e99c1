/// The coordinator's bookkeeping of work not yet finished: new tasks drawn lazily from the
/// scan's source, failed attempts waiting to run again, tasks a full system bounced, and how
/// many attempts are running. Plain state, owned by the coordinator's loop.
///
/// New tasks are made only when a slot is there for them, so a scan of ten million tasks
/// starts at once and holds only what is in flight.
struct WorkQueue {
    private var source: AnyIterator<ScanTask>
    /// The next new task, drawn ahead so `hasNew` can answer.
    private var lookahead: ScanTask?
    private var sourceEnded = false
    /// Failed attempts: they wait for a local slot when the local system has any.
    private var reruns = FIFO<Attempt>()
    /// Tasks a `busy` system sent back: not failed, so any slot takes them, before new ones.
    private var bounced = FIFO<Attempt>()
    /// Attempts handed to a system whose outcome the loop has not taken yet.
    private(set) var running = 0
    /// Re-runs wait for a local slot when the local system has any; else for any slot.
    let rerunOnLocal: Bool
    private var parked: Set<SlotKind> = []

    init<Tasks: Sequence<ScanTask>>(tasks: Tasks, rerunOnLocal: Bool) {
        self.source = AnyIterator(tasks.makeIterator())
        self.rerunOnLocal = rerunOnLocal
    }

    private mutating func hasNew() -> Bool {
        if lookahead == nil, !sourceEnded {
            lookahead = source.next()
            sourceEnded = lookahead == nil
        }
        return lookahead != nil
    }

    /// Whether every task has its outcome: none waiting, none running.
    mutating func isDone() -> Bool {
        running == 0 && reruns.isEmpty && bounced.isEmpty && !hasNew()
    }

    /// Queues a failed attempt to run again.
    mutating func rerun(_ work: Attempt) {
        reruns.append(work)
    }

    /// Queues a task that a full system sent back, to go out again as it was.
    mutating func bounce(_ work: Attempt) {
        bounced.append(work)
    }

    /// The loop took the outcome of a running attempt.
    mutating func finished() {
        running -= 1
    }

    /// Reserves a slot that is free right now for the next piece of work, if both exist.
    mutating func takeFreeSlot(from systems: Systems) async -> (Attempt, Reservation)? {
        if !reruns.isEmpty, let reservation = await systems.tryReserve(localOnly: rerunOnLocal) {
            return (start(reruns.removeFirst()), reservation)
        }
        if !bounced.isEmpty || hasNew(), let reservation = await systems.tryReserve() {
            return (start(popAny()), reservation)
        }
        return nil
    }

    /// The kind of slot request to park in the task group, if work waits for that kind of
    /// slot and no request for it is parked yet. Call until it returns nil.
    mutating func slotRequestToPark() -> SlotKind? {
        if !reruns.isEmpty, rerunOnLocal, !parked.contains(.local) {
            parked.insert(.local)
            return .local
        }
        if !bounced.isEmpty || hasNew() || (!reruns.isEmpty && !rerunOnLocal), !parked.contains(.any) {
            parked.insert(.any)
            return .any
        }
        return nil
    }

    /// The work to run on a slot that a parked request obtained, or nil to release the slot.
    mutating func work(for reservation: Reservation, requestedAs kind: SlotKind) -> Attempt? {
        parked.remove(kind)
        if !reruns.isEmpty, !rerunOnLocal || reservation.system.isLocal { return start(reruns.removeFirst()) }
        if !bounced.isEmpty || hasNew() { return start(popAny()) }
        return nil
    }

    /// A bounced task, else a new one. Call only when one of them exists.
    private mutating func popAny() -> Attempt {
        if !bounced.isEmpty { return bounced.removeFirst() }
        let task = lookahead ?? ScanTask(input: 0)  // hasNew() drew it just before
        lookahead = nil
        return Attempt(task: task, attempt: 1)
    }

    private mutating func start(_ work: Attempt) -> Attempt {
        running += 1
        return work
    }
}

/// One attempt at one task: which try this is (from 1).
struct Attempt: Sendable {
    let task: ScanTask
    let attempt: Int
}

/// Which slots a parked request waits for: local ones (for re-runs) or any.
enum SlotKind: Sendable { case local, any }

/// A first-in first-out queue that frees the room of taken elements as it goes.
struct FIFO<Element> {
    private var elements: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == elements.count }

    mutating func append(_ element: Element) {
        elements.append(element)
    }

    /// The oldest element. Call only when not empty.
    mutating func removeFirst() -> Element {
        let element = elements[head]
        head += 1
        if head > 64, head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }
}
