import SkyNetRuntime

extension WorkRoot {
    /// Removes the roots under `parent` that a node which ended without cleaning up left behind:
    /// directories named exactly as `make` names them (`skynet-node-<pid>-XXXXXX`), of this
    /// process's uid, holding a lock file that no live node holds. Anything else — a user's own
    /// `skynet-node-notes`, a root without a lock file (its node died between `mkdtemp` and
    /// taking the lock: an empty directory, left alone) — is never touched, since the parent is
    /// a shared place like /tmp. Returns the names removed.
    ///
    /// Never follows a link: an entry that is not a directory of ours is left alone, and the
    /// removal unlinks links inside a root as names.
    @discardableResult
    static func sweep(in parent: String? = nil) -> [String] {
        let parent = parent ?? defaultParent()
        guard let directory = try? DirectoryHandle.open(parent) else { return [] }
        var removed: [String] = []
        for name in candidates(in: parent) {
            // The lock stays taken while the root goes: no sweeper of another node decides on it
            // meanwhile, and a live node never lets its lock go before its root is gone.
            guard let held = abandonment(of: name, in: parent) else { continue }
            directory.removeTree(name)
            close(held)
            removed.append(name)
        }
        return removed
    }

    /// Whether `name` is exactly a root's name: the prefix, a pid, `-`, and mkdtemp's six letters
    /// or digits.
    static func isRootName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        let prefix = Array(Self.prefix.utf8)
        guard bytes.count >= prefix.count + 8, bytes.starts(with: prefix) else { return false }
        let rest = bytes[prefix.count...]
        guard let dash = rest.firstIndex(of: UInt8(ascii: "-")) else { return false }
        let pid = rest[..<dash], suffix = rest[(dash + 1)...]
        let isDigit = { (byte: UInt8) in byte >= 0x30 && byte <= 0x39 }
        let isAlphanumeric = { (byte: UInt8) in isDigit(byte) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) }
        return !pid.isEmpty && pid.count <= 10 && pid.allSatisfy(isDigit)
            && suffix.count == 6 && suffix.allSatisfy(isAlphanumeric)
    }

    /// Entries of `parent` named like a root: directories (not links) owned by our uid.
    private static func candidates(in parent: String) -> [String] {
        guard let stream = opendir(parent) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = String(decoding: directoryEntryName(entry), as: UTF8.self)
            guard isRootName(name) else { continue }
            var stats = stat()
            guard fstatat(dirfd(stream), name, &stats, AT_SYMLINK_NOFOLLOW) == 0,
                  stats.st_mode & S_IFMT == S_IFDIR, stats.st_uid == getuid() else { continue }
            names.append(name)
        }
        return names
    }

    /// Whether the root `name` has no live node: nil while one holds its lock or it has no
    /// regular lock file of ours; else the descriptor now holding the lock. `flock` on a second
    /// open of our own root fails too, so our own root is never abandoned.
    private static func abandonment(of name: String, in parent: String) -> Int32? {
        let fd = open(parent + "/" + name + "/" + lockName, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var stats = stat()
        guard fstat(fd, &stats) == 0, stats.st_mode & S_IFMT == S_IFREG, stats.st_uid == getuid(),
              flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
