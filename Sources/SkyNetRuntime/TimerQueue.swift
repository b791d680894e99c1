import Synchronization

/// The actions a clock has pending, earliest deadline first (ties in the order scheduled).
///
/// Most deadlines come in the order they fall due: a node's scans all sleep the same second, a
/// link's requests all have the same time limit. Such runs go into a few lanes, each sorted
/// because it is only appended to: scheduling, running and cancelling are O(1) there, where a
/// heap of tens of thousands of entries walked a dozen of them, scattered in memory, at every
/// insert and removal. A deadline that fits no lane goes to a min-heap, where each entry knows
/// its own place, so that cancelling is O(log n) with no hash lookup.
///
/// A cancelled entry in a lane stays stored, without its action, until the entries before it
/// leave; a lane where such entries outnumber the pending is compacted.
package struct TimerQueue {
    /// Which queue an entry is in: a ticket of another queue is not taken out of this one.
    private static let queues = Atomic<UInt64>(0)

    /// One pending action. A class so that its ticket can find it in the queue.
    package final class Entry: @unchecked Sendable {  // safe: `place` and `action` change only inside the TimerQueue that holds it, which its clock keeps behind its lock
        package let deadline: ContinuousClock.Instant
        let id: UInt64
        fileprivate let queue: UInt64
        /// Nil once it left the queue (ran or cancelled): a ticket held on to keeps no
        /// action's captures alive.
        private(set) var action: (@Sendable () -> Void)?
        fileprivate var place: Place

        fileprivate init(deadline: ContinuousClock.Instant, id: UInt64, queue: UInt64, action: @escaping @Sendable () -> Void) {
            self.deadline = deadline
            self.id = id
            self.queue = queue
            self.action = action
            place = .gone
        }

        /// Earlier deadline first; of two at the same instant, the one scheduled first.
        func precedes(_ other: Entry) -> Bool {
            (deadline, id) < (other.deadline, other.id)
        }

        /// Takes the action out (once it left the queue).
        fileprivate func leave() -> (@Sendable () -> Void)? {
            place = .gone
            defer { action = nil }
            return action
        }
    }

    /// Where an entry is kept.
    fileprivate enum Place {
        case heap(index: Int)
        case lane(Int)
        /// It ran or was cancelled.
        case gone
    }

    /// What has left the queue to run: its deadline and action.
    package struct Due {
        package let deadline: ContinuousClock.Instant
        package let action: @Sendable () -> Void
    }

    /// The most lanes kept: enough for the few time limits a process uses at once, few enough
    /// that finding the earliest entry stays a handful of comparisons.
    static let laneLimit = 8

    private var heap: [Entry] = []
    private var lanes: [Lane] = []
    private var lastID: UInt64 = 0
    private let identity = TimerQueue.queues.add(1, ordering: .relaxed).newValue

    package init() {}

    /// The earliest deadline pending.
    package var firstDeadline: ContinuousClock.Instant? { first?.entry.deadline }

    /// Every pending deadline, earliest first (O(n log n): for tests).
    package var deadlines: [ContinuousClock.Instant] {
        (heap + lanes.flatMap(\.pending)).sorted { $0.precedes($1) }.map(\.deadline)
    }

    /// How many entries are stored, cancelled ones still in a lane included (for tests).
    package var storedCount: Int { heap.count + lanes.reduce(0) { $0 + $1.stored } }

    package mutating func insert(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        lastID += 1
        let entry = Entry(deadline: deadline, id: lastID, queue: identity, action: action)
        if let lane = lane(taking: deadline) {
            lanes[lane].append(entry)
            entry.place = .lane(lane)
        } else {
            entry.place = .heap(index: heap.count)
            heap.append(entry)
            siftUp(heap.count - 1)
        }
        return TimerTicket(entry: entry)
    }

    /// Removes and returns the first entry if it is due at `now`.
    package mutating func popFirst(dueAt now: ContinuousClock.Instant) -> Due? {
        guard let (lane, first) = first, first.deadline <= now else { return nil }
        let action = if let lane { lanes[lane].popFirst() } else { removeFromHeap(at: 0) }
        return action.map { Due(deadline: first.deadline, action: $0) }
    }

    /// Removes the entry of `ticket`; false when it is not here (it ran or was cancelled).
    package mutating func remove(_ ticket: TimerTicket) -> Bool {
        guard ticket.entry.queue == identity else { return false }
        switch ticket.entry.place {
        case .heap(let index):
            guard index < heap.count, heap[index] === ticket.entry else { return false }
            _ = removeFromHeap(at: index)
            return true
        case .lane(let lane):
            guard lane < lanes.count else { return false }
            lanes[lane].cancel(ticket.entry)
            return true
        case .gone:
            return false
        }
    }

    /// The earliest pending entry, and the lane it is first in (nil: the heap's top).
    private var first: (lane: Int?, entry: Entry)? {
        var best: (lane: Int?, entry: Entry)? = heap.first.map { (nil, $0) }
        for (index, lane) in lanes.enumerated() {
            guard let candidate = lane.first else { continue }
            if best.map({ candidate.precedes($0.entry) }) ?? true { best = (index, candidate) }
        }
        return best
    }

    /// The lane `deadline` can be appended to: the one whose last deadline is the latest not
    /// after it (so that lanes stay apart), else an empty or a new lane; nil when all are
    /// taken by later deadlines.
    private mutating func lane(taking deadline: ContinuousClock.Instant) -> Int? {
        var best: (lane: Int, last: ContinuousClock.Instant)?
        var empty: Int?
        for (index, lane) in lanes.enumerated() {
            guard let last = lane.entries.last?.deadline else {
                empty = empty ?? index
                continue
            }
            if last <= deadline, best.map({ last > $0.last }) ?? true { best = (index, last) }
        }
        if let best { return best.lane }
        if let empty { return empty }
        guard lanes.count < Self.laneLimit else { return nil }
        lanes.append(Lane())
        return lanes.count - 1
    }

    private mutating func removeFromHeap(at index: Int) -> (@Sendable () -> Void)? {
        let removed = heap[index]
        let last = heap.removeLast()
        if index < heap.count {
            heap[index] = last
            last.place = .heap(index: index)
            siftDown(index)
            siftUp(heapIndex(of: last))
        }
        if heap.isEmpty, heap.capacity > 1024 { heap = [] }  // give back a burst's memory
        return removed.leave()
    }

    private func heapIndex(of entry: Entry) -> Int {
        if case .heap(let index) = entry.place { return index }
        preconditionFailure("an entry of the heap knows its index")
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, heap[left].precedes(heap[first]) { first = left }
            if right < heap.count, heap[right].precedes(heap[first]) { first = right }
            guard first != parent else { return }
            swapAt(parent, first)
            parent = first
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        heap[a].place = .heap(index: a)
        heap[b].place = .heap(index: b)
    }
}

/// Entries in the order of their deadlines, as they were appended: the first pending one is
/// at `head`. Cancelled entries (their action gone) stay until they reach the front.
private struct Lane {
    private(set) var entries: [TimerQueue.Entry] = []
    /// The first entry still stored; before it, entries that left.
    private var head = 0
    /// Cancelled entries stored after `head` (never at it).
    private var cancelled = 0

    var stored: Int { entries.count - head }
    var first: TimerQueue.Entry? { head < entries.count ? entries[head] : nil }
    var pending: [TimerQueue.Entry] { entries[head...].filter { $0.action != nil } }

    mutating func append(_ entry: TimerQueue.Entry) {
        entries.append(entry)
    }

    /// Takes the first entry out; its action.
    mutating func popFirst() -> (@Sendable () -> Void)? {
        let action = entries[head].leave()
        head += 1
        dropLeftFront()
        return action
    }

    mutating func cancel(_ entry: TimerQueue.Entry) {
        _ = entry.leave()
        if entry === entries[head] {
            head += 1
            dropLeftFront()
        } else {
            cancelled += 1
            if cancelled > 1024, cancelled * 2 > stored { compact() }
        }
    }

    /// Steps past cancelled entries at the front, and gives back what lies before `head`.
    private mutating func dropLeftFront() {
        while head < entries.count, entries[head].action == nil {
            head += 1
            cancelled -= 1
        }
        if head == entries.count {
            entries.removeAll(keepingCapacity: entries.capacity <= 1024)
            head = 0
        } else if head > 1024, head * 2 > entries.count {
            entries.removeSubrange(0..<head)
            head = 0
        }
    }

    /// Keeps only the pending entries (they keep their lane, so their place stays true).
    private mutating func compact() {
        entries = pending
        head = 0
        cancelled = 0
    }
}
