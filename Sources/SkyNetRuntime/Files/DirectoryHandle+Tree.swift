extension DirectoryHandle {
    /// How deep `removeTree` descends holding a descriptor per level; deeper directories are
    /// moved up to the top of the tree being removed and removed from there.
    static let removalDepth = 64

    /// Removes `name` here and, when it is a directory, everything below it; never follows a
    /// symbolic link (a link is removed as a name: a job's `ln -s / x` never takes `/` with
    /// it). No recursion (a job may nest directories deeper than any stack) and a descriptor
    /// per level at most `removalDepth` deep. Best effort, no throw: what cannot be removed
    /// stays.
    package func removeTree(_ name: String) {
        guard (try? Self.check(name, in: [name])) != nil else { return }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else { return remove(name) }
        guard let top = try? child(name, create: false, path: name) else { return }
        top.removeContents()
        _ = unlinkat(descriptor, name, AT_REMOVEDIR)
    }

    /// Removes everything inside this directory (see `removeTree`).
    private func removeContents() {
        var flattened = 0
        // Each pass empties what it reaches; a pass that moved deep directories up to the top
        // is followed by one more, which finds them there. Bounded (each pass removes levels).
        for _ in 0..<10_000 {
            var stack: [DirectoryListing] = []
            guard let first = DirectoryListing(self) else { return }
            stack.append(first)
            var moved = false
            while let level = stack.last {
                guard let entry = level.next() else {
                    stack.removeLast()
                    if let parent = stack.last, let name = level.name { _ = unlinkat(parent.descriptor, name, AT_REMOVEDIR) }
                    continue
                }
                guard entry.isDirectory else {
                    _ = unlinkat(level.descriptor, entry.name, 0)
                    continue
                }
                if stack.count >= Self.removalDepth {
                    flattened += 1
                    _ = renameat(level.descriptor, entry.name, descriptor, ".skynet-removing-\(flattened)")
                    moved = true
                    continue
                }
                guard let listing = DirectoryListing(in: level, named: entry.name) else {
                    _ = unlinkat(level.descriptor, entry.name, 0)  // not a directory after all
                    continue
                }
                stack.append(listing)
            }
            if !moved { return }
        }
    }
}

/// The entries of one open directory, read with `readdir`. Names stay C strings as read (a job
/// may make names that are not UTF-8: they are removed all the same).
private final class DirectoryListing {
    struct Entry {
        let name: [CChar]
        let isDirectory: Bool
    }

    /// Its name in its parent listing (nil for the top).
    let name: [CChar]?
    let descriptor: Int32
    private let stream: OpaquePointer

    /// The directory `handle` itself (read through a duplicate: the handle keeps its own).
    convenience init?(_ handle: DirectoryHandle) {
        self.init(descriptor: dup(handle.descriptor), name: nil)
    }

    /// The subdirectory `name` of `parent`, opened without following a link.
    convenience init?(in parent: DirectoryListing, named name: [CChar]) {
        let fd = retrying { openat(parent.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        self.init(descriptor: fd, name: name)
    }

    private init?(descriptor: Int32, name: [CChar]?) {
        guard descriptor >= 0 else { return nil }
        // fdopendir owns the descriptor from here: closedir closes it.
        guard let stream = fdopendir(descriptor) else {
            _ = closeDescriptor(descriptor)
            return nil
        }
        // A duplicate shares its file offset with the original: an earlier pass left it at the end.
        rewinddir(stream)
        self.name = name
        self.descriptor = descriptor
        self.stream = stream
    }

    deinit { closedir(stream) }

    /// The next entry but `.` and `..`; nil at the end.
    func next() -> Entry? {
        while let entry = readdir(stream) {
            let name = directoryEntryName(entry).map { CChar(bitPattern: $0) } + [0]
            if name == [46, 0] || name == [46, 46, 0] { continue }
            // d_type may be unknown (some file systems): then ask, without following a link.
            var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {
                var info = stat()
                isDirectory = fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFDIR
            }
            return Entry(name: name, isDirectory: isDirectory)
        }
        return nil
    }
}
