import SkyNetRuntime
import SkyNetWire
import SkyNetWork

private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }

extension ScanJournal {
    /// The longest line read as an entry: room for a result of 1 MiB and an input of 256 KiB,
    /// even fully escaped. A longer one is damage, skipped without being held.
    package static let maxLineLength = 8 * 1024 * 1024

    /// The journal opened for appending and locked (`init(path:continuing:)`) on the blocking
    /// pool, for async callers.
    package static func appending(to path: String, continuing: Bool = true) async throws -> ScanJournal {
        try await onBlockingPool { try ScanJournal(path: path, continuing: continuing) }
    }

    /// The entries of a journal file, all held; none when it does not exist. For small
    /// journals (tests, tools); a resume uses `readResumePoint`.
    package static func read(path: String) throws(Failure) -> (entries: [Entry], skipped: Int) {
        var entries: [Entry] = []
        let skipped = try forEachEntry(path: path) { entries.append($0) }
        return (entries, skipped)
    }

    /// Calls `body` with each entry of the file in order, reading it in bounded chunks; nothing
    /// when it does not exist. Lines that do not parse (a torn last line after a crash, damage)
    /// or are longer than `maxLineLength` are skipped and counted; empty lines and `printed`
    /// marks are not counted.
    /// - Returns: how many lines were skipped.
    package static func forEachEntry(
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
        guard fd >= 0 else { throw failure(path) }
        defer { close(fd) }
        // A line longer than the bound is dropped as it streams past, and counted.
        var lines = LineFramer(maxLineBytes: maxLineLength, overLong: .skip)
        var skipped = 0
        var chunkOffset = 0, lineOffset = 0  // where in the file the chunk and the current line start
        func take(_ piece: LineFramer.Piece) {
            guard case .line(let bytes) = piece else { skipped += 1; return }
            guard !bytes.isEmpty else { return }
            guard let line = bytes.withMemoryRebound(to: UInt8.self, { readLine($0) }) else { skipped += 1; return }
            body(line, Place(offset: lineOffset, length: bytes.count))
        }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(path)
            }
            if count == 0 { break }
            chunk.withUnsafeBytes { raw in
                var start = 0
                while start < count {
                    var ended = false
                    lines.split(UnsafeRawBufferPointer(rebasing: raw[..<count]), from: &start) { take($0); ended = true; return false }
                    if ended { lineOffset = chunkOffset + start }
                }
            }
            chunkOffset += count
        }
        lines.finish(take)
        return skipped
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
            guard result != nil || error != nil, let whole = Int(exactly: status),
                  let files = Entry.returnedFiles(inLine: line)
            else { return nil }
            return Entry(input: try fields.int("input"), text: try fields.optionalString("text"), job: try fields.optionalString("job"),
                         result: result ?? "", status: whole, error: error,
                         system: try fields.string("system"), attempt: try fields.int("attempt"),
                         seconds: try fields.optionalNumber("seconds") ?? 0, files: files)
        } catch {
            return nil
        }
    }
}
