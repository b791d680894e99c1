import SkyNetRuntime

private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }

/// How far an input that can be read only once is copied aside.
struct SpoolLimits: Sendable {
    /// The scan reads no more lines than this (`--total`): the copy stops once it holds them.
    var lines: Int
    /// The most bytes copied; past it the inputs are refused.
    var bytes: Int
}

extension InputFile {
    /// The most bytes a pipe or device (standard input included) may pass to a scan: 1 GiB.
    /// A regular file is read where it is, at any size.
    package static let spoolCap = 1 << 30

    /// Copies `source` (standard input, a pipe, a FIFO, a device) into a temporary file
    /// unlinked at once (it goes when the descriptor closes), so the inputs can be counted
    /// first and read twice. Does not close `source`.
    ///
    /// Each line is checked as soon as it is copied, so the copy ends at the first bad line
    /// with the message a file gives (an unfinished line that is already too long, or holds a
    /// NUL byte, is bad whatever follows); it also ends once it holds `limits.lines` lines,
    /// and past `limits.bytes` bytes (by at most one read) the inputs are refused.
    static func spool(_ source: Int32, name: String, limits: SpoolLimits) throws(InputFailure) -> Int32 {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/skynet-inputs-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { $0.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else { throw InputFailure("inputs \(name): cannot make a temporary file in \(directory): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = $0.baseAddress.map { unlink($0) } }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        do {
            try copy(source, to: fd, name: name, directory: directory, limits: limits)
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    private static func copy(_ source: Int32, to fd: Int32, name: String, directory: String, limits: SpoolLimits) throws(InputFailure) {
        var cursor = LineCursor(descriptor: fd, name: name)
        var chunk = [UInt8](repeating: 0, count: LineCursor.chunkSize)
        var copied = 0
        var lines = 0  // complete lines copied
        var unfinished = UnfinishedLine()
        while lines < limits.lines {
            let count = chunk.withUnsafeMutableBytes { systemRead(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw InputFailure("inputs \(name): \(String(cString: strerror(errno)))") }
            if count == 0 { return }
            guard chunk[..<count].withUnsafeBytes({ writeFully($0, to: fd) }) else {
                throw InputFailure("inputs \(name): cannot spool to \(directory): \(String(cString: strerror(errno)))")
            }
            copied += count
            lines += unfinished.add(chunk[0..<count])
            // The cursor walks the copy behind the writer; a newline is always ahead of it, so
            // it never mistakes the copy's current end for the end of the inputs.
            while cursor.lineIndex < min(lines, limits.lines) { _ = try cursor.nextLine() }
            if unfinished.isBad, cursor.lineIndex < limits.lines {
                _ = try cursor.nextLine()  // throws the file's message for it
            }
            if copied > limits.bytes, lines < limits.lines {
                throw InputFailure("""
                    inputs \(name): more than \(byteCount(limits.bytes)) arrived through a pipe or device, the most a scan \
                    copies aside; save the inputs to a file and pass its path (a file is read where it is, at any size), \
                    or give --total to read only the first lines
                    """)
            }
        }
    }

    /// `1 GiB`, `16 MiB`, or a number of bytes.
    private static func byteCount(_ bytes: Int) -> String {
        if bytes >= 1 << 30, bytes % (1 << 30) == 0 { return "\(bytes >> 30) GiB" }
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        return "\(bytes) bytes"
    }
}

/// The line being copied that has not ended yet: whether it is already bad however it goes on.
private struct UnfinishedLine {
    private var length = 0
    private var holdsNUL = false

    /// Too long for an input, or holding a NUL byte.
    var isBad: Bool { holdsNUL || length > ScanTask.maxTextBytes + 1 }

    /// Takes in the next bytes; returns how many lines they ended.
    mutating func add(_ bytes: ArraySlice<UInt8>) -> Int {
        var ended = 0
        var lastStart = bytes.startIndex
        for index in bytes.indices where bytes[index] == 10 {
            ended += 1
            lastStart = index + 1
        }
        if ended > 0 {
            length = 0
            holdsNUL = false
        }
        let rest = bytes[lastStart...]
        length += rest.count
        holdsNUL = holdsNUL || rest.contains(0)
        return ended
    }
}
