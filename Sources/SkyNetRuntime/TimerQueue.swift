/// The actions a clock has pending: a min-heap by deadline (ties in the order scheduled), with
/// the position of each ticket kept so that cancelling is O(log n) too.
package struct TimerQueue {
    package struct Entry {
        package let deadline: ContinuousClock.Instant
        let id: UInt64
        package let action: @Sendable () -> Void

        /// Earlier deadline first; of two at the same instant, the one scheduled first.
        func precedes(_ other: Entry) -> Bool {
            (deadline, id) < (other.deadline, other.id)
        }
    }

    private var entries: [Entry] = []
    private var positions: [UInt64: Int] = [:]
    private var lastID: UInt64 = 0

    package init() {}

    package var first: Entry? { entries.first }
    /// Every pending deadline, earliest first (O(n log n): for tests).
    package var deadlines: [ContinuousClock.Instant] { entries.sorted { $0.precedes($1) }.map(\.deadline) }

    package mutating func insert(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        lastID += 1
        entries.append(Entry(deadline: deadline, id: lastID, action: action))
        positions[lastID] = entries.count - 1
        siftUp(entries.count - 1)
        return TimerTicket(id: lastID)
    }

    /// Removes and returns the first entry if it is due at `now`.
    package mutating func popFirst(dueAt now: ContinuousClock.Instant) -> Entry? {
        guard let first, first.deadline <= now else { return nil }
        return remove(at: 0)
    }

    /// Removes the entry of `ticket`; false when there is none (it ran or was cancelled).
    package mutating func remove(_ ticket: TimerTicket) -> Bool {
        guard let index = positions[ticket.id] else { return false }
        _ = remove(at: index)
        return true
    }

    private mutating func remove(at index: Int) -> Entry {
        let removed = entries[index]
        positions[removed.id] = nil
        let last = entries.removeLast()
        if index < entries.count {
            entries[index] = last
            positions[last.id] = index
            siftDown(index)
            siftUp(index)
        }
        if entries.isEmpty, positions.capacity > 1024 { positions = [:] }  // give back a burst's memory
        return removed
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
        positions[entries[a].id] = a
        positions[entries[b].id] = b
    }
}
