import SkyNetRuntime
import SkyNetWork

/// A node process's private place for the files of its tasks: `PARENT/skynet-node-<pid>-XXXXXX/`
/// (mode 0700, made by `mkdtemp`), holding `.lock`, an `flock` kept for the process's life, and
/// one `conn-<N>/` per connection that sent file work (N counts from 1 per process).
///
/// The lock is how a later node tells a root left by a node that was killed (SIGKILL, a power
/// cut) from a live one's: `sweep` removes the roots of its own uid whose lock it can take. The
/// lock's descriptor is close-on-exec, so a job that outlives its node never holds it.
final class WorkRoot: Sendable {
    /// What every root's name starts with, the pid and `-` following.
    static let prefix = "skynet-node-"
    static let lockName = ".lock"

    /// The directory holding the root, and the root's name in it.
    let parent: String
    let name: String
    let handle: DirectoryHandle
    /// The descriptor holding the `flock` (-1 once `remove` released it).
    private let lock: Locked<Int32>
    /// Connection directories made so far: the next one is `conn-<made + 1>`.
    private let made = Locked(0)

    /// The root's absolute path.
    var path: String { parent == "/" ? "/" + name : parent + "/" + name }

    private init(parent: String, name: String, handle: DirectoryHandle, lock: Int32) {
        self.parent = parent
        self.name = name
        self.handle = handle
        self.lock = Locked(lock)
    }

    deinit { releaseLock() }

    /// Makes a new root under `parent` (`$TMPDIR`, else `/tmp`, when nil) and takes its lock.
    static func make(in parent: String? = nil, pid: Int32 = getpid()) throws(FileError) -> WorkRoot {
        let parent = parent ?? defaultParent()
        let (handle, path) = try DirectoryHandle.mkdtemp(in: parent, prefix: "\(prefix)\(pid)-")
        let name = String(path.split(separator: "/").last ?? "")
        // The root is new, ours and 0700: nobody else can have put anything at this path.
        let fd = open(path + "/" + lockName, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = FileError(path: path + "/" + lockName, code: errno)
            if fd >= 0 { close(fd) }
            try? DirectoryHandle.open(parent).removeTree(name)
            throw error
        }
        return WorkRoot(parent: parent, name: name, handle: handle, lock: fd)
    }

    /// `$TMPDIR` when set (and absolute), else `/tmp`.
    static func defaultParent() -> String {
        if let dir = ProcessInfo.processInfo.environment["TMPDIR"], dir.hasPrefix("/") { return dir }
        return "/tmp"
    }

    /// Makes the next connection's directory, `conn-<N>`.
    func openConnection() throws(FileError) -> ConnectionDirectory {
        let number = made.withLock { made in
            made += 1
            return made
        }
        let name = "conn-\(number)"
        return ConnectionDirectory(name: name, root: self, handle: try handle.directory([name], create: true))
    }

    /// Whether the root still holds its lock (`remove` not called yet).
    var isHeld: Bool { lock.withLock { $0 } >= 0 }

    /// Removes the whole root, then lets its lock go. Later calls do nothing.
    func remove() {
        guard isHeld else { return }
        (try? DirectoryHandle.open(parent))?.removeTree(name)
        releaseLock()
    }

    private func releaseLock() {
        lock.withLock { fd in
            if fd >= 0 { close(fd) }  // closing the last descriptor releases the flock
            fd = -1
        }
    }
}

/// `conn-<N>/`: the directories of one connection's tasks and its basefiles (`base/`).
package final class ConnectionDirectory: Sendable {
    let name: String
    let root: WorkRoot
    package let handle: DirectoryHandle
    /// Task directories made so far: request ids are reused and sectors re-run, so a task's
    /// directory is `task-<sector>-<K>` with K counting per connection.
    private let tasks = Locked(0)

    init(name: String, root: WorkRoot, handle: DirectoryHandle) {
        self.name = name
        self.root = root
        self.handle = handle
    }

    /// The absolute path of the directory.
    var path: String { root.path + "/" + name }

    /// The name of the next task directory for `sector`.
    func nextTaskName(sector: Int) -> String {
        let number = tasks.withLock { tasks in
            tasks += 1
            return tasks
        }
        return "task-\(sector)-\(number)"
    }

    /// Removes the connection's directory and everything in it (links as names only).
    func remove() {
        root.handle.removeTree(name)
    }
}
