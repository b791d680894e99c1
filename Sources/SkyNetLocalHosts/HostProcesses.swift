import Foundation

/// One live process as /proc shows it (Linux).
package struct HostProcess: Sendable, Equatable {
    package let pid: Int32
    package let parent: Int32
    /// The command name (`comm`, at most 15 bytes): `sshd`, `sh`, `skynet`.
    package let name: String
    /// `R`, `S`, `T` (stopped), `Z` (zombie), …
    package let state: Character
    /// Its process group and session: a session's processes keep its id (sshd calls setsid
    /// for each), even once reparented to init, and even while an exec hides their environment.
    package var group: Int32 = 0
    package var session: Int32 = 0
}

/// The processes of this machine, read from /proc: what the SSH test hosts use to find what
/// they started (a session's processes leave sshd's process group, so a group kill cannot
/// reach them, and a job reparented to init keeps no trace of its parents).
package enum HostProcesses {
    /// Every process that is not a zombie (a zombie holds nothing and cannot be killed).
    package static func all() -> [HostProcess] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).compactMap(read).filter { $0.state != "Z" }
    }

    /// The process `pid`, unless it is gone.
    package static func read(_ pid: Int32) -> HostProcess? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
        // The name may hold spaces and parentheses: it is whatever lies between the first `(`
        // and the last `)`; after it come the state and the parent.
        let name = String(stat[stat.index(after: open)..<close])
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 3, let state = fields[0].first, let parent = Int32(fields[1]),
              let group = Int32(fields[2]), let session = Int32(fields[3]) else { return nil }
        return HostProcess(pid: pid, parent: parent, name: name, state: state, group: group, session: session)
    }

    /// The live descendants of `root` (not `root` itself), found by walking parents. A process
    /// whose parent died has been handed to init already and is no descendant any more.
    package static func descendants(of root: Int32, in processes: [HostProcess] = all()) -> [HostProcess] {
        var children: [Int32: [HostProcess]] = [:]
        for process in processes { children[process.parent, default: []].append(process) }
        var found: [HostProcess] = []
        var queue = [root]
        while let pid = queue.popLast() {
            for child in children[pid] ?? [] where child.pid != root {
                found.append(child)
                queue.append(child.pid)
            }
        }
        return found
    }

    /// The live processes whose environment holds exactly `entry` (`NAME=VALUE`). Only
    /// processes this one may read (its own user's, or all as root) are seen. A process in the
    /// middle of an exec (or of its death) shows an empty environment: one reading may miss it.
    package static func carrying(_ entry: String, in processes: [HostProcess] = all()) -> [Int32] {
        let wanted = Array(entry.utf8)
        return processes.map(\.pid).filter { pid in
            guard let environment = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")) else { return false }
            return environment.split(separator: 0, omittingEmptySubsequences: true).contains { Array($0) == wanted }
        }
    }

    /// Stops (SIGSTOP) every process `list()` returns, again until it returns no new one, then
    /// kills them all (SIGKILL): a process frozen first cannot fork a child the kill misses.
    /// Returns the pids killed. Bounded: at most 50 rounds of listing.
    @discardableResult
    package static func freezeAndKill(_ list: () -> [Int32]) -> [Int32] {
        var frozen: [Int32] = []
        for _ in 0..<50 {
            let fresh = list().filter { !frozen.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh { _ = kill(pid, SIGSTOP) }
            frozen += fresh
        }
        for pid in frozen { _ = kill(pid, SIGKILL) }
        return frozen
    }

    /// Kills everything `list()` names, and every process of their sessions and process
    /// groups (found again when an exec hides a marker, or a parent's death hid the lineage),
    /// sweep after sweep (SIGSTOP first, as `freezeAndKill`), until two sweeps in a row a few
    /// ms apart find nothing new alive; then waits until every one killed is gone. `spare`:
    /// sessions and groups never to touch (this process's own). Bounded by `timeout`; returns
    /// the pids still alive then.
    @discardableResult
    package static func sweep(_ list: ([HostProcess]) -> [Int32], sparing spare: Set<Int32>, within timeout: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        var killed: Set<Int32> = [], sessions: Set<Int32> = [], groups: Set<Int32> = []
        var quiet = 0
        while quiet < 2, ContinuousClock.now < deadline {
            let processes = all()
            let named = Set(list(processes))
            for process in processes where named.contains(process.pid) {
                if process.session > 1, !spare.contains(process.session) { sessions.insert(process.session) }
                if process.group > 1, !spare.contains(process.group) { groups.insert(process.group) }
            }
            let fresh = processes.filter { process in
                !killed.contains(process.pid) && process.pid != getpid()
                    && (named.contains(process.pid) || sessions.contains(process.session) || groups.contains(process.group))
            }.map(\.pid)
            if fresh.isEmpty {
                quiet += 1
            } else {
                quiet = 0
                for pid in fresh { _ = kill(pid, SIGSTOP) }
                for pid in fresh { _ = kill(pid, SIGKILL) }
                killed.formUnion(fresh)
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await awaitGone(Array(killed), within: max(.zero, deadline - ContinuousClock.now))
    }

    /// Waits until none of `pids` is alive (gone, or a zombie), at most `timeout`; returns
    /// those still alive then. A killed process takes a moment to die, and nothing announces
    /// it to a process that is not its parent: this polls /proc.
    @discardableResult
    package static func awaitGone(_ pids: [Int32], within timeout: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        func alive() -> [Int32] { pids.filter { read($0).map { $0.state != "Z" } ?? false } }
        var left = alive()
        while !left.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            left = alive()
        }
        return left
    }
}
