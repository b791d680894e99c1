import SkyNetRuntime
import SkyNetWork

// STAND-INS FOR WP1 (issue 21): DELETE THIS FILE WHEN wt-files-wp1 IS MERGED.
//
// The design's "API fixed up front" (issue21-design.md §8) gives these types to WP1, public in
// SkyNetRuntime (`Files/DirectoryHandle.swift`, `Files/OpenFile.swift`) and SkyNetWork
// (`FailureCode`). Until that branch lands, WP2's node code is built and tested against these
// internal copies with the same names and signatures; deleting the file makes the same code use
// WP1's. They do what the design says, minimally: every path opened one component at a time,
// never following a symbolic link.

/// A file system call that failed: which path, and its errno.
struct FileError: Error, CustomStringConvertible, Sendable {
    let path: String
    let code: Int32

    var description: String { "\(path): \(String(cString: strerror(code)))" }
}

/// What `fstat` says of an open file.
struct FileStatus: Sendable {
    let size: Int64, mtimeNanoseconds: Int64, mode: Int, isRegular: Bool
}

/// One `O_DIRECTORY` descriptor; every path below it is opened without following links.
/// (Public as WP1's is: `Node.Options.freeSpace` names it.)
public final class DirectoryHandle: Sendable {
    let descriptor: Int32
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { _ = Glibc.close(descriptor) }

    static func open(_ path: String) throws(FileError) -> DirectoryHandle {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path: path, code: errno) }
        return DirectoryHandle(descriptor: fd, path: path)
    }

    static func mkdtemp(in parent: String, prefix: String) throws(FileError) -> (DirectoryHandle, path: String) {
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { Glibc.mkdtemp($0.baseAddress!) }
        guard made != nil else { throw FileError(path: parent, code: errno) }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (try open(path), path)
    }

    func directory(_ components: [String], create: Bool) throws(FileError) -> DirectoryHandle {
        var fd = dup(descriptor)
        guard fd >= 0 else { throw FileError(path: path, code: errno) }
        var walked = path
        for component in components where !component.isEmpty && component != "." {
            walked += "/" + component
            var next = openat(fd, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT, create {
                if mkdirat(fd, component, 0o700) != 0, errno != EEXIST {
                    let code = errno
                    _ = Glibc.close(fd)
                    throw FileError(path: walked, code: code)
                }
                next = openat(fd, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let code = errno
            _ = Glibc.close(fd)
            guard next >= 0 else { throw FileError(path: walked, code: code) }
            fd = next
        }
        return DirectoryHandle(descriptor: fd, path: walked)
    }

    func createFile(_ name: String) throws(FileError) -> OpenFile {
        let fd = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError(path: path + "/" + name, code: errno) }
        return OpenFile(descriptor: fd, path: path + "/" + name)
    }

    func openFile(_ name: String) throws(FileError) -> OpenFile {
        let fd = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path: path + "/" + name, code: errno) }
        let file = OpenFile(descriptor: fd, path: path + "/" + name)
        guard try file.status().isRegular else { throw FileError(path: path + "/" + name, code: EINVAL) }
        return file
    }

    func link(_ name: String, to target: DirectoryHandle, as newName: String) throws(FileError) {
        guard linkat(descriptor, name, target.descriptor, newName, 0) == 0 else {
            throw FileError(path: target.path + "/" + newName, code: errno)
        }
    }

    func rename(_ name: String, to newName: String) throws(FileError) {
        guard renameat(descriptor, name, descriptor, newName) == 0 else { throw FileError(path: path + "/" + newName, code: errno) }
    }

    func remove(_ name: String) {
        if unlinkat(descriptor, name, 0) != 0, errno == EISDIR { _ = unlinkat(descriptor, name, AT_REMOVEDIR) }
    }

    func removeTree(_ name: String) {
        let fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return remove(name) }  // a file or a link: only the name goes
        if let stream = fdopendir(fd) {
            let inner = DirectoryHandle(descriptor: dup(fd), path: path + "/" + name)
            var names: [String] = []
            while let entry = readdir(stream) {
                let child = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if child != ".", child != ".." { names.append(child) }
            }
            closedir(stream)
            for child in names { inner.removeTree(child) }
        } else {
            _ = Glibc.close(fd)
        }
        _ = unlinkat(descriptor, name, AT_REMOVEDIR)
    }

    func freeBytes() throws(FileError) -> Int64 {
        var stats = statvfs()
        guard fstatvfs(descriptor, &stats) == 0 else { throw FileError(path: path, code: errno) }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }
}

/// One open file: positioned reads and writes, its status, its mode and time set at the end.
final class OpenFile: Sendable {
    private let descriptor: Locked<Int32>
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = Locked(descriptor)
        self.path = path
    }

    deinit { close() }

    private var fd: Int32 { descriptor.withLock { $0 } }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileError) -> Int {
        let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
        guard count >= 0 else { throw FileError(path: path, code: errno) }
        return count
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset) + off_t(done))
            guard count > 0 else { throw FileError(path: path, code: count < 0 ? errno : EIO) }
            done += count
        }
    }

    func status() throws(FileError) -> FileStatus {
        var stats = stat()
        guard fstat(fd, &stats) == 0 else { throw FileError(path: path, code: errno) }
        return FileStatus(size: Int64(stats.st_size), mtimeNanoseconds: Int64(stats.st_mtim.tv_sec) * 1_000_000_000 + Int64(stats.st_mtim.tv_nsec),
                          mode: Int(stats.st_mode & 0o7777), isRegular: stats.st_mode & S_IFMT == S_IFREG)
    }

    func finish(mode: Int, mtimeNanoseconds: Int64) throws(FileError) {
        guard fchmod(fd, mode_t(mode)) == 0 else { throw FileError(path: path, code: errno) }
        var times = [timespec(tv_sec: Int(mtimeNanoseconds / 1_000_000_000), tv_nsec: Int(mtimeNanoseconds % 1_000_000_000))]
        times.insert(times[0], at: 0)
        guard futimens(fd, times) == 0 else { throw FileError(path: path, code: errno) }
    }

    func close() {
        descriptor.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }
}

extension FailureCode {
    /// WP1 adds these as cases of `FailureCode` (same raw values).
    static let noSpace: FailureCode = "no-space"
    static let fileTooLarge: FailureCode = "file-too-large"
    static let missingReturn: FailureCode = "missing-return"
    static let badFile: FailureCode = "bad-file"
}
