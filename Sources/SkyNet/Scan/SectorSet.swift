/// A set of sectors in `0..<total`, one bit each: ten million sectors take 1.25 MB, however
/// many of them are in the set.
///
/// What a resumed scan skips: the journal fills it, the task list asks `contains(_:)`.
public struct SectorSet: Sendable, Equatable {
    /// The sectors the set can hold are `0..<total`.
    public let total: Int
    /// How many sectors are in the set.
    public private(set) var count = 0
    private var words: [UInt64]

    /// An empty set over `0..<total` (a negative total is taken as 0).
    public init(total: Int) {
        self.total = max(0, total)
        words = Array(repeating: 0, count: (self.total + 63) / 64)
    }

    /// Whether `sector` is in the set; a sector outside `0..<total` never is.
    public func contains(_ sector: Int) -> Bool {
        guard sector >= 0, sector < total else { return false }
        return words[sector >> 6] & Self.bit(sector) != 0
    }

    /// Adds `sector`; false when it was already in the set or lies outside `0..<total`.
    @discardableResult
    public mutating func insert(_ sector: Int) -> Bool {
        guard sector >= 0, sector < total else { return false }
        let bit = Self.bit(sector)
        guard words[sector >> 6] & bit == 0 else { return false }
        words[sector >> 6] |= bit
        count += 1
        return true
    }

    /// Whether the set holds no sector.
    public var isEmpty: Bool { count == 0 }

    private static func bit(_ sector: Int) -> UInt64 { 1 << UInt64(sector & 63) }
}
