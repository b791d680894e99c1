/// The actions a clock has pending: a min-heap by deadline (ties in the order scheduled).
/// Each entry knows its own place in the heap, so that cancelling is O(log n) too and moving
/// an entry costs no hash lookup: a node with tens of thousands of tasks keeps as many
/// deadlines, and moves them at every insert and removal.
package struct TimerQueue {
    /// One pending action. A class so that its ticket can find it in the heap.
    package final class Entry: @unchecked Sendable {  // safe: `position` and `action` change only inside the TimerQueue that holds it, which its clock keeps behind its lock
        package let deadline: ContinuousClock.Instant
        let id: UInt64
        /// Nil once it left the queue (ran or cancelled): a ticket held on to keeps no
        /// action's captures alive.
        private(set) var action: (@Sendable () -> Void)?
        /// Its index in the heap; -1 once it left.
        fileprivate var position: Int

        fileprivate init(deadline: ContinuousClock.Instant, id: UInt64, action: @escaping @Sendable () -> Void, position: Int) {
            self.deadline = deadline
            self.id = id
            self.action = action
            self.position = position
        }

        /// Earlier deadline first; of two at the same instant, the one scheduled first.
        func precedes(_ other: Entry) -> Bool {
            (deadline, id) < (other.deadline, other.id)
        }

        /// Takes the action out (once it left the queue).
        fileprivate func leave() -> (@Sendable () -> Void)? {
            position = -1
            defer { action = nil }
            return action
        }
    }

    /// What has left the queue to run: its deadline and action.
    package struct Due {
        package let deadline: ContinuousClock.Instant
        package let action: @Sendable () -> Void
    }

    private var entries: [Entry] = []
    private var lastID: UInt64 = 0

    package init() {}

    /// The earliest deadline pending.
    package var firstDeadline: ContinuousClock.Instant? { entries.first?.deadline }
    /// Every pending deadline, earliest first (O(n log n): for tests).
    package var deadlines: [ContinuousClock.Instant] { entries.sorted { $0.precedes($1) }.map(\.deadline) }

    package mutating func insert(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        lastID += 1
        let entry = Entry(deadline: deadline, id: lastID, action: action, position: entries.count)
        entries.append(entry)
        siftUp(entries.count - 1)
        return TimerTicket(entry: entry)
    }

    /// Removes and returns the first entry if it is due at `now`.
    package mutating func popFirst(dueAt now: ContinuousClock.Instant) -> Due? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let deadline = first.deadline
        return remove(at: 0).map { Due(deadline: deadline, action: $0) }
    }

    /// Removes the entry of `ticket`; false when it is not here (it ran or was cancelled).
    package mutating func remove(_ ticket: TimerTicket) -> Bool {
        let position = ticket.entry.position
        guard position >= 0, position < entries.count, entries[position] === ticket.entry else { return false }
        _ = remove(at: position)
        return true
    }

    private mutating func remove(at index: Int) -> (@Sendable () -> Void)? {
        let removed = entries[index]
        let last = entries.removeLast()
        if index < entries.count {
            entries[index] = last
            last.position = index
            siftDown(index)
            siftUp(last.position)
        }
        if entries.isEmpty, entries.capacity > 1024 { entries = [] }  // give back a burst's memory
        return removed.leave()
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < entries.count, entries[left].precedes(entries[first]) { first = left }
            if right < entries.count, entries[right].precedes(entries[first]) { first = right }
            guard first != parent else { return }
            swapAt(parent, first)
            parent = first
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        entries[a].position = a
        entries[b].position = b
    }
}
