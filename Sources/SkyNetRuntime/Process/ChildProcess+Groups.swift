/// The process groups of children that have one of their own and have not been reaped: what a
/// process about to exit at once (a second Ctrl-C, its parent gone) must take along, since no
/// orderly stop will run for them. A group is listed from its spawn until just before its
/// leader is reaped, so while it is listed its id cannot belong to anyone else. Each change is
/// also told to the `GroupKeeper`, when one runs.
enum LiveGroups {
    private struct State {
        var leaders: Set<pid_t> = []
        /// Fulfilled when the list is next empty.
        var emptied: [AsyncSignal<Void>] = []
        /// The write end of the keeper's pipe, while a keeper listens.
        var keeper: Int32?
    }

    private static let state = Locked(State())

    static func add(_ leader: pid_t) {
        state.withLock { state in
            state.leaders.insert(leader)
            tellKeeper("+\(leader)\n", &state)
        }
    }

    static func remove(_ leader: pid_t) {
        let emptied = state.withLock { state -> [AsyncSignal<Void>] in
            guard state.leaders.remove(leader) != nil else { return [] }
            tellKeeper("-\(leader)\n", &state)
            guard state.leaders.isEmpty else { return [] }
            defer { state.emptied = [] }
            return state.emptied
        }
        for signal in emptied { signal.fulfil(()) }
    }

    /// SIGKILLs every listed group, holding the list: no leader is reaped meanwhile.
    static func killAll() {
        state.withLock { state in
            for leader in state.leaders { _ = kill(-leader, SIGKILL) }
        }
    }

    /// Returns once no group is listed (at once if none is).
    static func waitUntilNone() async {
        let signal = AsyncSignal<Void>()
        let none = state.withLock { state in
            if state.leaders.isEmpty { return true }
            state.emptied.append(signal)
            return false
        }
        if !none { await signal.value }
    }

    /// Whether a keeper listens.
    static var isKept: Bool { state.withLock { $0.keeper != nil } }

    /// Hands the keeper's pipe over; the groups listed so far are told to it at once.
    static func attachKeeper(_ fd: Int32) {
        state.withLock { state in
            if let old = state.keeper { close(old) }
            state.keeper = fd
            let leaders = state.leaders
            for leader in leaders { tellKeeper("+\(leader)\n", &state) }
        }
    }

    /// Writes one line to the keeper, under the list's lock so that lines keep the list's
    /// order. A blocking write, but a short one to a process that does nothing but read; it
    /// runs where spawns and reaps run (a spawning queue, reaper threads), never on the pool.
    /// A keeper that is gone is forgotten.
    private static func tellKeeper(_ line: String, _ state: inout State) {
        guard let fd = state.keeper, !Array(line.utf8).withUnsafeBytes({ writeFully($0, to: fd) }) else { return }
        close(fd)
        state.keeper = nil
    }
}

extension ChildProcess {
    /// Kills (SIGKILL) the whole group of every child of this process that has a group of its
    /// own and still runs: for a process that is about to exit without stopping them in order,
    /// so that no job it started outlives it. Quick and thread-safe; call it right before `exit`.
    package static func killEveryGroup() {
        LiveGroups.killAll()
    }

    /// For a process about to exit after an orderly stop: gives the children that have a group
    /// of their own up to `grace` to end (their stops may be under way), then kills every group
    /// still there (SIGKILL) and waits, up to `reapWithin`, until each leader is reaped. Jobs
    /// that ignore SIGTERM end here too instead of outliving the process.
    package static func endEveryGroup(grace: Duration, reapWithin: Duration = .seconds(2)) async {
        if (try? await withTimeout(grace) { await LiveGroups.waitUntilNone() }) != nil { return }
        LiveGroups.killAll()
        _ = try? await withTimeout(reapWithin) { await LiveGroups.waitUntilNone() }
    }
}
