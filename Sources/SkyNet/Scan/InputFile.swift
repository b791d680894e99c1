import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, bytes, count) }

/// The inputs of a scan, one per line of a file: sector i is line i (0-based).
///
/// Opening it reads the whole file once as a stream (bounded memory) to count its lines and
/// check every one, so a bad line is an error before any task runs, naming its line number.
/// Standard input (`-`) and anything else that is not a regular file (a pipe, a FIFO, `<(…)`),
/// which can be read only once, is first copied to an unlinked temporary file, then read the
/// same way.
/// The tasks are then read lazily, a batch ahead, on a thread of their own (`feed`).
public final class InputFile: Sendable {
    /// The file's name in messages (`stdin` for `-`).
    public let name: String
    /// How many inputs the scan runs: the lines, at most the `limit` given to `open`.
    public let count: Int
    let descriptor: Int32

    private init(name: String, descriptor: Int32, count: Int) {
        self.name = name
        self.descriptor = descriptor
        self.count = count
    }

    deinit { close(descriptor) }

    /// Opens `path` (`-`: standard input) and checks its first `limit` lines, on a thread of
    /// its own: a long file keeps it reading, which must not hold the cooperative pool.
    public static func open(path: String, limit: Int = .max) async throws -> InputFile {
        try await onOwnThread(named: "inputs-open") { () throws -> InputFile in
            let (name, fd) = path == "-" ? ("stdin", try spool(0, name: "stdin")) : (path, try openFile(path))
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
    public func verify(against fingerprint: @escaping @Sendable (Int) -> UInt32?) async throws {
        try await onOwnThread(named: "inputs-verify") { [self] () throws in
            var cursor = LineCursor(descriptor: descriptor, name: name)
            while cursor.lineIndex < count, let text = try cursor.nextLine() {
                let sector = cursor.lineIndex - 1
                if let expected = fingerprint(sector), expected != inputFingerprint(text) {
                    throw InputFailure("inputs \(name) line \(sector + 1) is not the input the journal ran as sector \(sector): the inputs changed since the journal was written; resume with the inputs it was written with, or start a new journal")
                }
            }
        }
    }

    private static func openFile(_ path: String) throws(InputFailure) -> Int32 {
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
            return try spool(fd, name: path)
        }
        return fd
    }

    /// Copies `source` (standard input, a pipe, a FIFO) to its end into a temporary file
    /// unlinked at once (it goes when the descriptor closes), so the inputs can be counted
    /// first and read twice. Does not close `source`.
    private static func spool(_ source: Int32, name: String) throws(InputFailure) -> Int32 {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/skynet-inputs-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { $0.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else { throw InputFailure("inputs \(name): cannot make a temporary file in \(directory): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = $0.baseAddress.map { unlink($0) } }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var chunk = [UInt8](repeating: 0, count: LineCursor.chunkSize)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                close(fd)
                throw InputFailure("inputs \(name): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return fd }
            var offset = 0
            while offset < count {
                let written = chunk[offset..<count].withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 {
                    close(fd)
                    throw InputFailure("inputs \(name): cannot spool to \(directory): \(String(cString: strerror(errno)))")
                }
                offset += written
            }
        }
    }
}
