/// A set of sectors in `0..<total`, one bit each: ten million sectors take 1.25 MB, however
/// many of them are in the set.
///
/// What a resumed scan skips: the journal fills it, the task list asks `contains(_:)`.
package struct SectorSet: Sendable, Equatable {
    /// The sectors the set can hold are `0..<total`.
    package let total: Int
    /// How many sectors are in the set.
    package private(set) var count = 0
    private var words: [UInt64]

    /// An empty set over `0..<total` (a negative total is taken as 0).
    package init(total: Int) {
        self.total = max(0, total)
        words = Array(repeating: 0, count: (self.total + 63) / 64)
    }

    /// Whether `sector` is in the set; a sector outside `0..<total` never is.
    package func contains(_ sector: Int) -> Bool {
        guard sector >= 0, sector < total else { return false }
        return words[sector >> 6] & Self.bit(sector) != 0
    }

    /// Adds `sector`; false when it was already in the set or lies outside `0..<total`.
    @discardableResult
    package mutating func insert(_ sector: Int) -> Bool {
        guard sector >= 0, sector < total else { return false }
        let bit = Self.bit(sector)
        guard words[sector >> 6] & bit == 0 else { return false }
        words[sector >> 6] |= bit
        count += 1
        return true
    }

    /// Takes `sector` out; false when it was not in the set.
    @discardableResult
    package mutating func remove(_ sector: Int) -> Bool {
        guard contains(sector) else { return false }
        words[sector >> 6] &= ~Self.bit(sector)
        count -= 1
        return true
    }

    /// The sectors of this set that `other` does not hold, a word of 64 sectors at a time.
    package func subtracting(_ other: SectorSet) -> SectorSet {
        var result = self
        result.count = 0
        for index in result.words.indices {
            if index < other.words.count { result.words[index] &= ~other.words[index] }
            result.count += result.words[index].nonzeroBitCount
        }
        return result
    }

    /// Whether the set holds no sector.
    package var isEmpty: Bool { count == 0 }

    /// The first sector from `start` on (within `0..<total`) that is not in the set, if any:
    /// found a word of 64 sectors at a time, so skipping ten million resumed sectors takes
    /// about 160,000 steps, not ten million.
    package func firstAbsent(from start: Int) -> Int? {
        var sector = max(0, start)
        while sector < total {
            let free = ~words[sector >> 6] & (~0 << UInt64(sector & 63))
            if free != 0 {
                let found = (sector & ~63) + free.trailingZeroBitCount
                return found < total ? found : nil
            }
            sector = (sector & ~63) + 64
        }
        return nil
    }

    /// The sectors of `0..<limit` that are not in the set, in order, found as they are asked
    /// for (every sector from `total` on counts as absent).
    package func absent(below limit: Int) -> AbsentSectors {
        AbsentSectors(set: self, limit: limit)
    }

    private static func bit(_ sector: Int) -> UInt64 { 1 << UInt64(sector & 63) }
}

/// The sectors below a limit that a `SectorSet` does not hold, in order: what a resumed scan
/// still has to run.
package struct AbsentSectors: Sequence, Sendable {
    let set: SectorSet
    let limit: Int

    package struct Iterator: IteratorProtocol {
        let set: SectorSet
        let limit: Int
        var from = 0

        package mutating func next() -> Int? {
            guard from < limit else { return nil }
            let sector = from < set.total ? (set.firstAbsent(from: from) ?? set.total) : from
            guard sector < limit else { return nil }
            from = sector + 1
            return sector
        }
    }

    package func makeIterator() -> Iterator { Iterator(set: set, limit: limit) }
}
