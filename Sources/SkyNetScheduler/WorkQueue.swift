import SkyNetRuntime
import SkyNetWork

/// The coordinator's bookkeeping of work not yet finished: new tasks drawn lazily from the
/// scan's source, failed attempts waiting to run again, tasks a full system bounced, and how
/// many attempts are running. Plain state, owned by the coordinator's loop.
struct WorkQueue {
    /// Where new tasks come from: a sequence drawn one at a time, or a feed of batches.
    enum Source {
        case iterator(AnyIterator<ScanTask>)
        case feed(any TaskFeed)
    }

    private var source: Source
    /// New tasks drawn ahead (one from an iterator, a batch from a feed) so `hasBouncedOrNew` can answer.
    private var lookahead = FIFO<ScanTask>()
    private var sourceEnded = false
    /// New tasks not drawn for an attempt yet, of the scan's count.
    private var unstarted: Int
    /// With an order window: the sectors started and not yet settled, so no new sector starts
    /// too far past the oldest of them.
    private var window: OrderWindow?
    /// Failed attempts, waiting to run again.
    private var reruns = FIFO<Attempt>()
    /// Tasks a `busy` system sent back: not failed, so any slot takes them, before new ones.
    private var bounced = FIFO<Attempt>()
    /// Attempts handed to a system whose outcome the loop has not taken yet.
    private(set) var running = 0
    /// Re-runs wait for a local slot when the local system has any; else for any slot.
    let rerunOnLocal: Bool
    private var parked: Set<SlotKind> = []

    init(source: Source, count: Int, rerunOnLocal: Bool, orderWindow: Int?) {
        self.source = source
        unstarted = count
        self.rerunOnLocal = rerunOnLocal
        self.window = orderWindow.map { OrderWindow(size: $0) }
    }

    /// How many tasks are still to be handed out: new ones, re-runs and bounced ones. What
    /// `Systems` offers nodes' lines by.
    var backlog: Int { max(0, unstarted) + reruns.count + bounced.count }

    /// Whether a new task waits in the source (drawing it ahead when needed).
    private mutating func hasMore() async -> Bool {
        if lookahead.isEmpty, !sourceEnded {
            switch source {
            case .iterator(let iterator):
                if let task = iterator.next() { lookahead.append(task) }
            case .feed(let feed):
                for task in await feed.nextBatch() { lookahead.append(task) }
            }
            sourceEnded = lookahead.isEmpty
        }
        return !lookahead.isEmpty
    }

    /// Whether every task has its outcome: none waiting, none running.
    mutating func isDone() async -> Bool {
        guard running == 0, reruns.isEmpty, bounced.isEmpty else { return false }
        return !(await hasMore())
    }

    /// A task has its final outcome (completed, or gave up): the order window moves past it.
    mutating func settled(_ task: ScanTask) {
        window?.settle(task.input)
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
    ///
    /// With `freed`, a slot whose attempt just ended is given back in the same step as the
    /// next one is reserved (often it is the same slot); it is given back in any case.
    mutating func takeFreeSlot(from systems: Systems, releasing freed: Reservation? = nil) async -> (Attempt, Reservation)? {
        var freed = freed
        func reserve(localOnly: Bool) async -> Reservation? {
            guard let slot = freed else { return await systems.tryReserve(localOnly: localOnly, backlog: backlog) }
            freed = nil
            return await systems.release(slot, reservingAgain: localOnly, backlog: backlog)
        }
        if !reruns.isEmpty, let reservation = await reserve(localOnly: rerunOnLocal) {
            return (start(reruns.removeFirst()), reservation)
        }
        if await hasBouncedOrNew(), let reservation = await reserve(localOnly: false) {
            return (start(popAny()), reservation)
        }
        if let freed { await systems.release(freed) }
        return nil
    }

    /// The kind of slot request to park among the scan's helpers, if work waits for that kind of
    /// slot and no request for it is parked yet. Call until it returns nil.
    mutating func slotRequestToPark() async -> SlotKind? {
        if !reruns.isEmpty, rerunOnLocal, !parked.contains(.local) {
            parked.insert(.local)
            return .local
        }
        if !parked.contains(.any), await hasBouncedOrNew() || (!reruns.isEmpty && !rerunOnLocal) {
            parked.insert(.any)
            return .any
        }
        return nil
    }

    /// The work to run on a slot that a parked request obtained, or nil to release the slot.
    mutating func work(for reservation: Reservation, requestedAs kind: SlotKind) async -> Attempt? {
        parked.remove(kind)
        if !reruns.isEmpty, !rerunOnLocal || reservation.system.isLocal { return start(reruns.removeFirst()) }
        if await hasBouncedOrNew() { return start(popAny()) }
        return nil
    }

    /// Whether a bounced task waits, or a new one may start now: one waits, and the order
    /// window has room for it.
    private mutating func hasBouncedOrNew() async -> Bool {
        if !bounced.isEmpty { return true }
        guard await hasMore() else { return false }
        guard let window, let next = lookahead.first else { return true }
        return window.admits(next.input)
    }

    /// A bounced task, else a new one. Call only when one of them exists.
    private mutating func popAny() -> Attempt {
        if !bounced.isEmpty { return bounced.removeFirst() }
        let task = lookahead.first ?? ScanTask(input: 0)  // hasBouncedOrNew() drew it just before
        if !lookahead.isEmpty { _ = lookahead.removeFirst() }
        unstarted -= 1
        window?.start(task.input)
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

/// The sectors started and not yet settled, oldest first: with `--keep-order` the output holds
/// results until every earlier sector has its outcome, so a new sector may start only while it
/// is less than `size` past the oldest unsettled one. That bounds what the output holds.
struct OrderWindow {
    let size: Int
    /// Started sectors in the order they started (increasing), settled ones dropped from the front.
    private var started = FIFO<Int>()
    private var settledAhead: Set<Int> = []

    init(size: Int) {
        self.size = max(1, size)
    }

    func admits(_ sector: Int) -> Bool {
        guard let oldest = started.first else { return true }
        return sector - oldest < size
    }

    mutating func start(_ sector: Int) {
        started.append(sector)
    }

    mutating func settle(_ sector: Int) {
        settledAhead.insert(sector)
        while let oldest = started.first, settledAhead.remove(oldest) != nil {
            _ = started.removeFirst()
        }
    }
}
