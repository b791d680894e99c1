import SkyNetRuntime

private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }

/// The inputs of a scan, one per line of a file: sector i is line i (0-based).
///
/// Opening it reads the whole file once as a stream (bounded memory) to count its lines and
/// check every one, so a bad line is an error before any task runs, naming its line number.
/// Standard input (`-`) and anything else that is not a regular file (a pipe, a FIFO, `<(…)`,
/// a device), which can be read only once, is first copied to an unlinked temporary file, then
/// read the same way; that copy stops at the `limit`-th line, at the first bad line, and at
/// `spoolCap` bytes (`InputFile+Spool.swift`).
/// The tasks are then read lazily, a batch ahead, on a thread of their own (`feed`).
package final class InputFile: Sendable {
    /// The file's name in messages (`stdin` for `-`).
    package let name: String
    /// How many inputs the scan runs: the lines, at most the `limit` given to `open`.
    package let count: Int
    let descriptor: Int32

    private init(name: String, descriptor: Int32, count: Int) {
        self.name = name
        self.descriptor = descriptor
        self.count = count
    }

    deinit { close(descriptor) }

    /// Opens `path` (`-`: standard input) and checks its first `limit` lines, on a thread of
    /// its own: a long file keeps it reading, which must not hold the cooperative pool, and a
    /// pipe may keep it waiting for as long as its writer likes, which must not hold a thread
    /// of the blocking pool. A pipe or device is copied aside up to `spoolCap` bytes at most
    /// (more is an error).
    package static func open(path: String, limit: Int = .max, spoolCap: Int = InputFile.spoolCap) async throws -> InputFile {
        try await onOwnThread(named: "inputs-open") { () throws -> InputFile in
            let spooling = SpoolLimits(lines: limit, bytes: spoolCap)
            let (name, fd) = path == "-"
                ? ("stdin", try spool(0, name: "stdin", limits: spooling)) : (path, try openFile(path, spooling: spooling))
            do {
                var cursor = LineCursor(descriptor: fd, name: name)
                while cursor.lineIndex < limit, try cursor.nextLine() != nil {}
                return InputFile(name: name, descriptor: fd, count: cursor.lineIndex)
            } catch {
                close(fd)
                throw error
            }
        }
    }

    /// Checks that every sector a journal holds ran with the input its line gives now
    /// (`fingerprint(sector)`: the fingerprint the journal holds, nil when it holds none): a
    /// journal of other inputs must not make a resume skip work it never did.
    package func verify(against fingerprint: @escaping @Sendable (Int) -> UInt32?) async throws {
        try await onBlockingPool { [self] () throws in
            var cursor = LineCursor(descriptor: descriptor, name: name)
            while cursor.lineIndex < count, let text = try cursor.nextLine() {
                let sector = cursor.lineIndex - 1
                if let expected = fingerprint(sector), expected != inputFingerprint(text) {
                    throw InputFailure("inputs \(name) line \(sector + 1) is not the input the journal ran as sector \(sector): the inputs changed since the journal was written; resume with the inputs it was written with, or start a new journal")
                }
            }
        }
    }

    private static func openFile(_ path: String, spooling: SpoolLimits) throws(InputFailure) -> Int32 {
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw InputFailure("inputs \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw InputFailure("inputs \(path): is a directory, not a file of one input per line")
        }
        // A pipe cannot be read twice (nor at an offset): read it once into a file that can.
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            defer { close(fd) }
            return try spool(fd, name: path, limits: spooling)
        }
        return fd
    }
}
