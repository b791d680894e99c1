import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, bytes, count) }

/// An append-only record of completed sectors, one JSON line each, so that a scan that dies
/// can be resumed without running them again.
///
/// Each line goes to the kernel with one `write` before the scan reports the sector as
/// completed: a coordinator killed with SIGKILL keeps every line it printed `Completed` for.
/// (Surviving a power loss would take an fsync per line; not done.)
public final class ScanJournal: Sendable {
    /// One completed sector.
    public struct Entry: Sendable, Equatable {
        public let input: Int
        public let result: String
        public let system: String
        public let attempt: Int
        public let seconds: Double

        public init(input: Int, result: String, system: String, attempt: Int, seconds: Double) {
            self.input = input
            self.result = result
            self.system = system
            self.attempt = attempt
            self.seconds = seconds
        }
    }

    /// A journal that cannot be opened, read or written, naming the file.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let path: String
    private let descriptor: Int32

    /// Opens (creating if needed) the journal for appending. When the file ends in a torn line,
    /// a newline is added first so the next entry starts on a line of its own.
    public init(path: String) throws(Failure) {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(description: "journal \(path): \(String(cString: strerror(errno)))") }
        descriptor = fd
        if let data = FileManager.default.contents(atPath: path), let last = data.last, last != 10 {
            try write([10])
        }
    }

    deinit { close(descriptor) }

    /// Appends one entry with a single `write`.
    public func append(_ entry: Entry) throws(Failure) {
        var json = JSONLine()
        json.add("input", entry.input)
        json.add("result", entry.result)
        json.add("system", entry.system)
        json.add("attempt", entry.attempt)
        json.add("seconds", (entry.seconds * 1000).rounded() / 1000)
        try write(json.line)
    }

    private func write(_ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "journal \(path): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// The entries of a journal file; none when it does not exist. Lines that do not parse (a
    /// torn last line after a crash, or damage) are skipped and counted.
    public static func read(path: String) throws(Failure) -> (entries: [Entry], skipped: Int) {
        guard FileManager.default.fileExists(atPath: path) else { return ([], 0) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(description: "journal \(path): cannot be read")
        }
        var entries: [Entry] = []
        var skipped = 0
        for line in data.split(separator: 10, omittingEmptySubsequences: true) {
            guard let entry = try? parse(line) else {
                skipped += 1
                continue
            }
            entries.append(entry)
        }
        return (entries, skipped)
    }

    private static func parse(_ line: Data) throws(WireError) -> Entry {
        let fields = try WireFields(line)
        return Entry(input: try fields.int("input"), result: try fields.string("result"),
                     system: try fields.string("system"), attempt: try fields.int("attempt"),
                     seconds: try fields.optionalNumber("seconds") ?? 0)
    }
}
