#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }

extension ScanJournal {
    /// The longest line read as an entry: room for a result of 1 MiB and an input of 256 KiB,
    /// even fully escaped. A longer one is damage, skipped without being held.
    public static let maxLineLength = 8 * 1024 * 1024

    /// The sectors in `0..<total` a journal holds, read as a stream: memory stays one bit per
    /// sector plus a bounded buffer, however long the file. No file: none.
    /// - Returns: the sectors, how many there are, and how many lines could not be read.
    public static func completedSectors(path: String, total: Int) throws(Failure) -> (sectors: SectorSet, count: Int, skipped: Int) {
        var sectors = SectorSet(total: total)
        let skipped = try forEachEntry(path: path) { if $0.completed { sectors.insert($0.input) } }
        return (sectors, sectors.count, skipped)
    }

    /// `completedSectors(path:total:)` on a thread of its own: a long journal keeps the read
    /// waiting on the disk, which must not hold a thread of the cooperative pool.
    public static func readCompletedSectors(path: String, total: Int) async throws -> (sectors: SectorSet, count: Int, skipped: Int) {
        try await onOwnThread(named: "journal-read") { try completedSectors(path: path, total: total) }
    }

    /// The journal opened for appending and locked (`init(path:continuing:)`) on a thread of
    /// its own, for async callers.
    public static func appending(to path: String, continuing: Bool = true) async throws -> ScanJournal {
        try await onOwnThread(named: "journal-open") { try ScanJournal(path: path, continuing: continuing) }
    }

    /// The entries of a journal file, all held; none when it does not exist. For small
    /// journals (tests, tools); a resume uses `completedSectors(path:total:)`.
    public static func read(path: String) throws(Failure) -> (entries: [Entry], skipped: Int) {
        var entries: [Entry] = []
        let skipped = try forEachEntry(path: path) { entries.append($0) }
        return (entries, skipped)
    }

    /// Calls `body` with each entry of the file in order, reading it in bounded chunks; nothing
    /// when it does not exist. Lines that do not parse (a torn last line after a crash, damage)
    /// or are longer than `maxLineLength` are skipped and counted; empty lines and `printed`
    /// marks are not counted.
    /// - Returns: how many lines were skipped.
    public static func forEachEntry(
        path: String, maxLineLength: Int = ScanJournal.maxLineLength, _ body: (Entry) -> Void
    ) throws(Failure) -> Int {
        try forEachLine(path: path, maxLineLength: maxLineLength) { line, _ in
            if case .entry(let entry) = line { body(entry) }
        }
    }

    /// What one line of a journal holds.
    enum Line {
        /// A sector's outcome.
        case entry(Entry)
        /// The results of these sectors' entries before this line reached stdout.
        case printed(ClosedRange<Int>)
    }

    /// Where a line lies in the file: its first byte and its length (newline excluded).
    struct Place {
        let offset: Int
        let length: Int
    }

    /// Calls `body` with each readable line of the file in order and where it lies, as
    /// `forEachEntry` does. - Returns: how many lines were skipped.
    static func forEachLine(
        path: String, maxLineLength: Int = ScanJournal.maxLineLength, _ body: (Line, Place) -> Void
    ) throws(Failure) -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 && errno == ENOENT { return 0 }
        func failure() -> Failure { Failure(description: "journal \(path): \(String(cString: strerror(errno)))") }
        guard fd >= 0 else { throw failure() }
        defer { close(fd) }
        var lines = JournalLines(maxLineLength: maxLineLength)
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure()
            }
            if count == 0 { break }
            chunk.withUnsafeBufferPointer { lines.feed(UnsafeBufferPointer(rebasing: $0[..<count]), body) }
        }
        lines.finish(body)
        return lines.skipped
    }

    /// One line of the journal: an entry, or a `printed` mark; nil when it is neither.
    static func readLine(_ bytes: UnsafeBufferPointer<UInt8>) -> Line? {
        if let entry = Entry(journalLine: bytes) ?? parse(bytes) { return .entry(entry) }
        return printedMark(bytes).map { .printed($0) }
    }

    /// One line of the journal as an entry; nil when it is not one.
    static func parse<Bytes: Collection<UInt8>>(_ line: Bytes) -> Entry? {
        guard let fields = try? WireFields(line) else { return nil }
        do throws(WireError) {
            let result = try fields.optionalString("result"), error = try fields.optionalString("error")
            // A status must be a whole number: a line that holds anything else is not an entry.
            let status = try fields.optionalNumber("status") ?? 0
            guard result != nil || error != nil, let whole = Int(exactly: status) else { return nil }
            return Entry(input: try fields.int("input"), text: try fields.optionalString("text"), job: try fields.optionalString("job"),
                         result: result ?? "", status: whole, error: error,
                         system: try fields.string("system"), attempt: try fields.int("attempt"),
                         seconds: try fields.optionalNumber("seconds") ?? 0)
        } catch {
            return nil
        }
    }
}

/// Splits a stream of chunks into journal lines, holding at most `maxLineLength` bytes of a
/// line that spans chunks; a longer line is dropped as it streams past and counted. Keeps
/// count of where each line starts in the file.
private struct JournalLines {
    typealias Body = (ScanJournal.Line, ScanJournal.Place) -> Void
    let maxLineLength: Int
    private(set) var skipped = 0
    /// The start of a line the last chunk ended in.
    private var partial: [UInt8] = []
    /// The current line has outgrown the bound: drop it up to its newline.
    private var overlong = false
    /// Where in the file the next chunk starts, and where the current line started.
    private var chunkOffset = 0
    private var lineOffset = 0

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ body: Body) {
        guard let base = chunk.baseAddress else { return }
        defer { chunkOffset += chunk.count }
        var start = 0
        while start < chunk.count {
            guard let found = memchr(base + start, 10, chunk.count - start) else {
                take(UnsafeBufferPointer(rebasing: chunk[start...]))
                return
            }
            let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            let piece = UnsafeBufferPointer(rebasing: chunk[start..<end])
            if partial.isEmpty && !overlong {
                line(piece, at: chunkOffset + start, body)
            } else {
                take(piece)
                endLine(body)
            }
            start = end + 1
            lineOffset = chunkOffset + start
        }
    }

    /// The end of the file: a last line without a newline is read like any other.
    mutating func finish(_ body: Body) {
        endLine(body)
    }

    /// Keeps a piece of the current line, unless the line is already too long.
    private mutating func take(_ piece: UnsafeBufferPointer<UInt8>) {
        guard !overlong else { return }
        if partial.count + piece.count > maxLineLength {
            overlong = true
            partial = []
        } else {
            partial.append(contentsOf: piece)
        }
    }

    private mutating func endLine(_ body: Body) {
        if overlong {
            skipped += 1
        } else if !partial.isEmpty {
            let offset = lineOffset
            let readable = partial.withUnsafeBufferPointer { Self.read($0, at: offset, body) }
            if !readable { skipped += 1 }
        }
        overlong = false
        partial.removeAll(keepingCapacity: true)
    }

    private mutating func line(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int, _ body: Body) {
        guard bytes.count <= maxLineLength else { skipped += 1; return }
        if !Self.read(bytes, at: offset, body) { skipped += 1 }
    }

    /// Passes the line's content to `body`; false when the line is not empty and not readable.
    private static func read(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int, _ body: Body) -> Bool {
        guard !bytes.isEmpty else { return true }
        guard let line = ScanJournal.readLine(bytes) else { return false }
        body(line, ScanJournal.Place(offset: offset, length: bytes.count))
        return true
    }
}
