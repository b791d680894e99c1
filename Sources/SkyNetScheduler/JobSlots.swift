/// The job slots of one system, numbered 1...capacity: what `{%}` names, as GNU parallel's
/// job slot does.
///
/// A task takes the lowest free slot when it starts and gives it back once its work has ended,
/// so tasks running at the same time never share a number, and a command that keeps per-slot
/// state (`--gpu {%}`, `scratch-{%}`) finds its slot free. Not a lock: its owner (the
/// system, under its lock) takes and returns slots in the same steps in which it counts its
/// running tasks.
struct JobSlots: Sendable {
    /// How many slots there are.
    let capacity: Int
    /// Slots given back, a min-heap: all below `unused`.
    private var returned: [Int] = []
    /// The lowest slot never taken yet (capacity + 1 once all were).
    private var unused = 1

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Takes the lowest free slot, or nil if every slot is taken.
    mutating func take() -> Int? {
        if let lowest = returned.first {
            removeLowestReturned()
            return lowest
        }
        guard unused <= capacity else { return nil }
        defer { unused += 1 }
        return unused
    }

    /// Gives `slot` back (one that `take` returned and was not given back since).
    mutating func giveBack(_ slot: Int) {
        assert(slot >= 1 && slot < unused && !returned.contains(slot), "slot \(slot) was not taken")
        returned.append(slot)
        var child = returned.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard returned[child] < returned[parent] else { break }
            returned.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func removeLowestReturned() {
        let last = returned.removeLast()
        guard !returned.isEmpty else { return }
        returned[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var lowest = parent
            if left < returned.count, returned[left] < returned[lowest] { lowest = left }
            if right < returned.count, returned[right] < returned[lowest] { lowest = right }
            guard lowest != parent else { return }
            returned.swapAt(parent, lowest)
            parent = lowest
        }
    }
}
