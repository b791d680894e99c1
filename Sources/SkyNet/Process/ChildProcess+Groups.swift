#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process groups of children that have one of their own and have not been reaped: what a
/// process about to exit at once (a second Ctrl-C, its parent gone) must take along, since no
/// orderly stop will run for them. A group is listed from its spawn until just before its
/// leader is reaped, so while it is listed its id cannot belong to anyone else.
enum LiveGroups {
    private static let leaders = Locked<Set<pid_t>>([])

    static func add(_ leader: pid_t) {
        _ = leaders.withLock { $0.insert(leader) }
    }

    static func remove(_ leader: pid_t) {
        _ = leaders.withLock { $0.remove(leader) }
    }

    /// SIGKILLs every listed group, holding the list: no leader is reaped meanwhile.
    static func killAll() {
        leaders.withLock { leaders in
            for leader in leaders { _ = kill(-leader, SIGKILL) }
        }
    }
}

extension ChildProcess {
    /// Kills (SIGKILL) the whole group of every child of this process that has a group of its
    /// own and still runs: for a process that is about to exit without stopping them in order,
    /// so that no job it started outlives it. Quick and thread-safe; call it right before `exit`.
    public static func killEveryGroup() {
        LiveGroups.killAll()
    }
}
