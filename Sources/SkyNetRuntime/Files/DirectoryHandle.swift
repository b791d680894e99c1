/// One open directory, and every file call made below it: paths are opened one component at a
/// time from it with `O_NOFOLLOW`, so no symbolic link (planted by a job, or by a peer's name)
/// is ever followed below a handle, and nothing is created outside it (docs/PROTOCOL.md,
/// "Files"). Portable to Darwin: plain `openat`, no `openat2`.
///
/// Every call blocks: threads of our own only (a file pump, a reader thread, the blocking pool),
/// never the cooperative pool. The descriptor is closed when the handle goes.
package final class DirectoryHandle: Sendable {
    /// The path it was opened by (relative to its parent handle's), for messages.
    package let path: String
    let descriptor: Int32

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { _ = closeDescriptor(descriptor) }

    /// Opens the directory at `path`: a root the caller chose (links in `path` itself are
    /// followed, as any path a person gives).
    package static func open(_ path: String) throws(FileError) -> DirectoryHandle {
        let fd = retrying { SkyNetRuntime.openDescriptor(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw FileError(path: path, code: errno) }
        return DirectoryHandle(descriptor: fd, path: path)
    }

    /// Makes a new directory `parent/prefixXXXXXX` (mode 0700, a name nobody else has) and
    /// opens it; returns it with its path.
    package static func mkdtemp(in parent: String, prefix: String) throws(FileError) -> (DirectoryHandle, path: String) {
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { SkyNetRuntime.makeTemporaryDirectory($0) }
        }
        guard made != nil else { throw FileError(path: "\(parent)/\(prefix)XXXXXX", code: errno) }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (try open(path), path)
    }

    /// Opens the directory `components` name below this one, one component at a time, never
    /// following a symbolic link (one on the way throws with `ELOOP` or `ENOTDIR`, naming the
    /// path up to it). With `create`, missing directories are made with `mode` less the umask:
    /// 0700 unless the caller says otherwise (a node's work directories stay private; a
    /// returned file's directories are made for a person, 0777). Empty and `.` components are
    /// skipped; `..` or a component holding `/` or NUL is refused (`EINVAL`).
    package func directory(_ components: [String], create: Bool, mode: Int = 0o700) throws(FileError) -> DirectoryHandle {
        var current = try reopen()
        var walked: [String] = []
        for component in components where !component.utf8.isEmpty && !component.utf8.elementsEqual([0x2E]) {
            walked.append(component)
            try Self.check(component, in: walked)
            current = try current.child(component, create: create, mode: mode, path: walked.joined(separator: "/"))
        }
        return current
    }

    /// Creates the file `name` here for writing: it must not exist (`O_EXCL`), and a link in its
    /// place is not followed. Mode 0600 until `OpenFile.finish`.
    package func createFile(_ name: String) throws(FileError) -> OpenFile {
        try Self.check(name, in: [name])
        let fd = retrying { openDescriptorAt(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw FileError(path: name, code: errno) }
        return OpenFile(descriptor: fd, path: name)
    }

    /// Opens the regular file `name` here for reading. A symbolic link is refused (`ELOOP`), so
    /// is anything but a regular file; `O_NONBLOCK` keeps a FIFO from holding the open.
    package func openFile(_ name: String) throws(FileError) -> OpenFile {
        try Self.check(name, in: [name])
        let fd = retrying { openDescriptorAt(descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw FileError(path: name, code: errno) }
        let file = OpenFile(descriptor: fd, path: name)
        guard try file.status().isRegular else {
            file.close()
            throw FileError(path: name, code: EINVAL, reason: "not a regular file")
        }
        return file
    }

    /// Makes `newName` in `target` a hard link to the file `name` here (a link named `name` is
    /// linked as itself, never followed).
    package func link(_ name: String, to target: DirectoryHandle, as newName: String) throws(FileError) {
        try Self.check(name, in: [name])
        try Self.check(newName, in: [newName])
        guard linkat(descriptor, name, target.descriptor, newName, 0) == 0 else { throw FileError(path: newName, code: errno) }
    }

    /// Renames `name` to `newName` here, replacing what `newName` was (atomically).
    package func rename(_ name: String, to newName: String) throws(FileError) {
        try Self.check(name, in: [name])
        try Self.check(newName, in: [newName])
        guard renameat(descriptor, name, descriptor, newName) == 0 else { throw FileError(path: newName, code: errno) }
    }

    /// Whether `name` here is the open `file` itself, not another file put in its place since
    /// (a link there is not followed: it is not the file).
    package func holds(_ name: String, file: OpenFile) -> Bool {
        guard (try? Self.check(name, in: [name])) != nil, let identity = try? file.identity() else { return false }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return FileIdentity(info) == identity
    }

    /// Removes the file, link or empty directory `name` here, if it is there.
    package func remove(_ name: String) {
        guard (try? Self.check(name, in: [name])) != nil else { return }
        if unlinkat(descriptor, name, 0) != 0, errno == EISDIR || errno == EPERM {
            _ = unlinkat(descriptor, name, AT_REMOVEDIR)
        }
    }

    /// Bytes free for an unprivileged user on this directory's file system.
    package func freeBytes() throws(FileError) -> Int64 {
        var info = statvfs()
        guard fstatvfs(descriptor, &info) == 0 else { throw FileError(path: path, code: errno) }
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? Int64.max : bytes
    }

    /// This directory opened once more (a handle the caller may keep past this one).
    func reopen() throws(FileError) -> DirectoryHandle {
        let fd = retrying { openDescriptorAt(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        guard fd >= 0 else { throw FileError(path: path, code: errno) }
        return DirectoryHandle(descriptor: fd, path: path)
    }

    /// The subdirectory `name`, never through a link; made first (with `mode` less the umask)
    /// when missing and `create`.
    func child(_ name: String, create: Bool, mode: Int = 0o700, path: String) throws(FileError) -> DirectoryHandle {
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        var fd = retrying { openDescriptorAt(descriptor, name, flags, 0) }
        if fd < 0, errno == ENOENT, create {
            // EEXIST: made meanwhile by another task of the same scan; the open below decides.
            guard mkdirat(descriptor, name, mode_t(mode & 0o777)) == 0 || errno == EEXIST else { throw FileError(path: path, code: errno) }
            fd = retrying { openDescriptorAt(descriptor, name, flags, 0) }
        }
        guard fd >= 0 else { throw FileError(path: path, code: errno) }
        return DirectoryHandle(descriptor: fd, path: path)
    }

    /// Refuses a name that is not one plain component: empty, `.`, `..`, or holding `/` or NUL.
    static func check(_ component: String, in walked: [String]) throws(FileError) {
        let bytes = component.utf8
        // Bytes, not characters: a `/` followed by a combining mark is one `Character`.
        guard !bytes.isEmpty, !bytes.elementsEqual([0x2E]), !bytes.elementsEqual([0x2E, 0x2E]), !bytes.contains(UInt8(ascii: "/")),
              !bytes.contains(0) else {
            throw FileError(path: walked.joined(separator: "/"), code: EINVAL, reason: "not a plain name (\"..\", \"/\" or NUL)")
        }
    }
}

/// Runs a call that returns -1 with errno, again while it says EINTR.
func retrying(_ call: () -> Int32) -> Int32 {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}

/// `open(2)` and `openat(2)` with their C variadic mode, and `mkdtemp(3)`: named apart from the
/// handle's own `open` and `mkdtemp`.
func openDescriptor(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags)
    #else
    Darwin.open(path, flags)
    #endif
}

func openDescriptorAt(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    openat(directory, name, flags, mode)
}

func makeTemporaryDirectory(_ template: UnsafeMutablePointer<CChar>) -> UnsafeMutablePointer<CChar>? {
    #if canImport(Glibc)
    Glibc.mkdtemp(template)
    #else
    Darwin.mkdtemp(template)
    #endif
}
