import SkyNetRuntime

extension WorkRoot {
    /// Removes the roots under `parent` that a node which ended without cleaning up left behind:
    /// directories named `skynet-node-*`, of this process's uid, whose lock is free (no live
    /// node holds it). A root without a lock file is removed once older than `unlockedGrace`
    /// (its node died between `mkdtemp` and taking the lock). Returns the names removed.
    ///
    /// Never follows a link: an entry that is not a directory of ours is left alone, and the
    /// removal unlinks links inside a root as names.
    @discardableResult
    static func sweep(in parent: String? = nil, now: Date = Date()) -> [String] {
        let parent = parent ?? defaultParent()
        guard let directory = try? DirectoryHandle.open(parent) else { return [] }
        var removed: [String] = []
        for name in candidates(in: parent) {
            // The lock stays taken while the root goes: no sweeper of another node decides on it
            // meanwhile, and a live node never lets its lock go before its root is gone.
            guard let held = abandonment(of: name, in: parent, now: now) else { continue }
            directory.removeTree(name)
            if held >= 0 { close(held) }
            removed.append(name)
        }
        return removed
    }

    /// Entries of `parent` named like a root: directories (not links) owned by our uid.
    private static func candidates(in parent: String) -> [String] {
        guard let stream = opendir(parent) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(prefix) else { continue }
            var stats = stat()
            guard fstatat(dirfd(stream), name, &stats, AT_SYMLINK_NOFOLLOW) == 0,
                  stats.st_mode & S_IFMT == S_IFDIR, stats.st_uid == getuid() else { continue }
            names.append(name)
        }
        return names
    }

    /// Whether the root `name` has no live node: nil while one holds its lock; else the
    /// descriptor now holding it (-1 for an old root without a lock file). `flock` on a second
    /// open of our own root fails too, so our own root is never abandoned.
    private static func abandonment(of name: String, in parent: String, now: Date) -> Int32? {
        let root = parent + "/" + name
        let fd = open(root + "/" + lockName, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            guard errno == ENOENT else { return nil }
            var stats = stat()
            guard lstat(root, &stats) == 0 else { return nil }
            let age = now.timeIntervalSince1970 - Double(stats.st_mtim.tv_sec)
            return age >= unlockedGrace.seconds ? -1 : nil
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
