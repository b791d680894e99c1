/// An open regular file (made by `DirectoryHandle.createFile` or `openFile`): positioned reads
/// and writes, its status, and its mode and time once written. Blocking calls: threads of our
/// own only (a file pump, a reader thread), never the cooperative pool.
///
/// The descriptor lives behind a lock (`Locked`) so that `close` cannot free a number another
/// thread is about to use: every call runs holding it (a file has one user at a time, so the
/// lock is never contended).
package final class OpenFile: Sendable {
    /// The path it was opened by, for messages.
    package let path: String
    private let descriptor: Locked<Int32?>

    init(descriptor: Int32, path: String) {
        self.descriptor = Locked(descriptor)
        self.path = path
    }

    deinit { close() }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file (0 there).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileError) -> Int {
        try withDescriptor { (fd) throws(FileError) -> Int in
            var total = 0
            while total < buffer.count {
                let count = pread(fd, buffer.baseAddress! + total, buffer.count - total, off_t(offset) + off_t(total))
                if count < 0, errno == EINTR { continue }
                if count < 0 { throw FileError(path: path, code: errno) }
                if count == 0 { break }
                total += count
            }
            return total
        }
    }

    /// Writes all of `bytes` at `offset`.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileError) {
        try withDescriptor { (fd) throws(FileError) in
            var total = 0
            while total < bytes.count {
                let count = pwrite(fd, bytes.baseAddress! + total, bytes.count - total, off_t(offset) + off_t(total))
                if count < 0, errno == EINTR { continue }
                if count < 0 { throw FileError(path: path, code: errno) }
                total += count
            }
        }
    }

    /// What `fstat` says now.
    package func status() throws(FileError) -> FileStatus {
        try withDescriptor { (fd) throws(FileError) in
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw FileError(path: path, code: errno) }
            return FileStatus(info)
        }
    }

    /// The device and inode of the open file (which file it is, whatever its name now).
    func identity() throws(FileError) -> FileIdentity {
        try withDescriptor { (fd) throws(FileError) in
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw FileError(path: path, code: errno) }
            return FileIdentity(info)
        }
    }

    /// Gives the written file its permission bits (`mode & 0o7777`) and modification time.
    package func finish(mode: Int, mtimeNanoseconds: Int64) throws(FileError) {
        try withDescriptor { (fd) throws(FileError) in
            guard fchmod(fd, mode_t(mode & 0o7777)) == 0 else { throw FileError(path: path, code: errno) }
            var (seconds, nanoseconds) = mtimeNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
            if nanoseconds < 0 { seconds -= 1; nanoseconds += 1_000_000_000 }
            let times = [timespec(tv_sec: 0, tv_nsec: omitTime), timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))]
            guard futimens(fd, times) == 0 else { throw FileError(path: path, code: errno) }
        }
    }

    /// Closes the file; later calls throw `EBADF`. Idempotent.
    package func close() {
        descriptor.withLock { fd in
            if let open = fd { _ = closeDescriptor(open) }
            fd = nil
        }
    }

    private func withDescriptor<T>(_ body: (Int32) throws(FileError) -> T) throws(FileError) -> T {
        try descriptor.withLock { (fd) throws(FileError) -> T in
            guard let open = fd else { throw FileError(path: path, code: EBADF) }
            return try body(open)
        }
    }
}

/// `UTIME_OMIT` (a macro Swift does not import): leaves a time as it is.
#if canImport(Glibc)
private let omitTime = (1 << 30) - 2
#else
private let omitTime = -2
#endif

/// `close(2)`, named apart from the methods called `close` that use it.
func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
