/// A file system call that failed, naming the path it was about (relative to the directory
/// it was opened from) and the errno; `reason`, when given, says it in words instead.
package struct FileError: Error, CustomStringConvertible, Sendable, Equatable {
    package let path: String
    package let code: Int32
    /// What went wrong when errno alone would mislead (`not a regular file`).
    package let reason: String?

    package init(path: String, code: Int32, reason: String? = nil) {
        self.path = path
        self.code = code
        self.reason = reason
    }

    /// Whether the path (or a directory on the way) was a symbolic link, which is never followed.
    package var isSymbolicLink: Bool { code == ELOOP && reason == nil }

    package var description: String {
        if let reason { return "\(path): \(reason)" }
        switch code {
        case ELOOP: return "\(path): a symbolic link (never followed)"
        case ENOTDIR: return "\(path): not a directory"
        default: return "\(path): \(String(cString: strerror(code)))"
        }
    }
}

/// What `fstat` says of an open file.
package struct FileStatus: Sendable, Equatable {
    package let size: Int64
    /// The modification time, nanoseconds since the epoch.
    package let mtimeNanoseconds: Int64
    /// The permission bits (`st_mode & 0o7777`).
    package let mode: Int
    package let isRegular: Bool

    package init(size: Int64, mtimeNanoseconds: Int64, mode: Int, isRegular: Bool) {
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.mode = mode
        self.isRegular = isRegular
    }

    init(_ info: stat) {
        #if canImport(Glibc)
        let time = info.st_mtim
        #else
        let time = info.st_mtimespec
        #endif
        self.init(size: Int64(info.st_size), mtimeNanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec),
                  mode: Int(info.st_mode) & 0o7777, isRegular: info.st_mode & S_IFMT == S_IFREG)
    }
}
