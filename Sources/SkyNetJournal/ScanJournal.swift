import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// An append-only record of completed sectors, one JSON line each, so that a scan that dies
/// can be resumed without running them again.
///
/// Each line goes to the kernel with one `write` before the scan reports the sector as
/// completed: a coordinator killed with SIGKILL keeps every line it printed `Completed` for.
/// (Surviving a power loss would take an fsync per line; not done.)
package final class ScanJournal: Sendable {
    /// One sector's outcome: its result when it completed (`status` 0), else why it failed.
    package struct Entry: Sendable, Equatable {
        /// The sector number.
        package let input: Int
        /// The input text the sector ran with (an `--inputs` line); nil: the sector number.
        package let text: String?
        /// The job the sector ran; nil: the built-in scan (and every line of a v1 journal).
        package let job: String?
        /// The job's result; empty when the sector failed.
        package let result: String
        /// 0 when the sector completed; else the command's exit status, 128 + the signal that
        /// killed it, or -1 for any other failure (a deadline, a command that cannot start).
        package let status: Int
        /// Why the sector failed its last attempt; nil when it completed.
        package let error: String?
        package let system: String
        package let attempt: Int
        package let seconds: Double
        /// The files the sector returned (`--return`), as the template gave each path,
        /// with its size and SHA-256; empty when none (and in a journal written before files could travel).
        package let files: [ReturnedFile]

        package init(
            input: Int, text: String? = nil, job: String? = nil, result: String, status: Int = 0, error: String? = nil,
            system: String, attempt: Int, seconds: Double, files: [ReturnedFile] = []
        ) {
            self.input = input
            self.text = text
            self.job = job
            self.result = result
            self.status = status
            self.error = error
            self.system = system
            self.attempt = attempt
            self.seconds = seconds
            self.files = files
        }

        /// Whether the sector completed (a resume skips it).
        package var completed: Bool { status == 0 && error == nil }

        /// The name of the job the sector ran.
        package var jobName: String { job ?? JobRegistry.scan }

        /// The text the job got as its input.
        package var inputText: String { text ?? String(input) }

        /// The status a failure message names: `exit status N` gives N, `killed by signal N`
        /// gives 128 + N (as a shell reports it), anything else -1.
        package static func status(of error: any Error) -> Int {
            let message = "\(error)"
            for (prefix, offset) in [("exit status ", 0), ("killed by signal ", 128)] where message.hasPrefix(prefix) {
                let digits = message.dropFirst(prefix.count).prefix { $0.isASCII && $0.isNumber }
                if let number = Int(digits), number > 0 { return number + offset }
            }
            return -1
        }
    }

    /// A journal that cannot be opened, read, written or locked, or that holds sectors another
    /// scan ran (another input or job), naming the file.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let path: String
    /// Open for appending: whole lines go to it (`line(for:)`), each with one `write`.
    package let descriptor: Int32

    /// Opens (creating if needed) the journal for appending, and locks it for as long as this
    /// object lives (`lock()`: a second writer, in this process or another, is refused).
    /// When the file ends in a torn line, a newline is added first so the next entry starts on
    /// a line of its own.
    ///
    /// - Parameter continuing: false for a scan that starts afresh: a journal that already
    ///   holds anything is then refused untouched, since appending to it would mix two scans.
    package init(path: String, continuing: Bool = true) throws(Failure) {
        self.path = path
        // Readable too, for the pread of the last byte; O_APPEND still puts every write at the end.
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure(path) }
        descriptor = fd
        try lock()
        if !continuing, try size() > 0 {
            throw Failure(description: "\(path) exists: add --resume to continue it, or remove it")
        }
        if try !endsInNewline() { try write([10]) }
    }

    deinit { close(descriptor) }

    /// Appends one entry with a single blocking `write`: for threads of our own. A scan queues
    /// `line(for:)` on its writer instead, before the line that reports the sector.
    package func append(_ entry: Entry) throws(Failure) {
        try write(line(for: entry))
    }

    /// The journal line of one entry, newline included, made in one buffer sized for it (a
    /// result may be half a megabyte: no second copy, no doubling growth).
    package func line(for entry: Entry) -> [UInt8] {
        let filesBytes = entry.files.reduce(0) { $0 + $1.path.utf8.count + 120 }
        var json = JSONLine(capacity: entry.result.utf8.count + (entry.text?.utf8.count ?? 0) + (entry.error?.utf8.count ?? 0) + filesBytes + 160)
        json.add("input", entry.input)
        if let text = entry.text { json.add("text", text) }
        if let job = entry.job { json.add("job", job) }
        json.add("status", entry.status)
        if let error = entry.error { json.add("error", error) } else { json.add("result", entry.result) }
        json.add("system", entry.system)
        json.add("attempt", entry.attempt)
        json.add("seconds", (entry.seconds * 1000).rounded() / 1000)
        if !entry.files.isEmpty { json.add("files", objects: entry.files.map(\.json)) }
        return json.takeLine()
    }

    /// The file's size in bytes.
    private func size() throws(Failure) -> Int {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw Self.failure(path) }
        return Int(info.st_size)
    }

    /// Whether the file is empty or its last byte is a newline: one `pread` of that byte, so
    /// opening a journal costs the same whatever its size.
    private func endsInNewline() throws(Failure) -> Bool {
        let size = try size()
        // Empty, or it shrank under us: nothing to tear.
        guard size > 0, let last = try bytes(1, at: size - 1).first else { return true }
        return last == 10
    }

    /// The `count` bytes at `offset`, fewer where the file ends, read with `pread`.
    func bytes(_ count: Int, at offset: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pread(descriptor, base + done, count - done, off_t(offset + done))
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw Self.failure(path) }
            if got == 0 { return Array(bytes[..<done]) }
            done += got
        }
        return bytes
    }

    /// The failure of the last call on the journal at `path`, naming it.
    static func failure(_ path: String) -> Failure {
        Failure(description: "journal \(path): \(String(cString: strerror(errno)))")
    }

    private func write(_ bytes: [UInt8]) throws(Failure) {
        guard bytes.withUnsafeBytes({ writeFully($0, to: descriptor) }) else { throw Self.failure(path) }
    }
}
