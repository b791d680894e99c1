/// A small helper process that kills this process's job groups when this process dies without
/// doing so itself (SIGKILL, a crash, the OOM killer): no orderly stop runs then, and each job
/// has a process group of its own, which nothing else would reach.
///
/// Its descriptor 3 is the read end of a pipe whose write end only this process holds
/// (close-on-exec). This process tells it each group as it is spawned (`+PID`) and before its
/// leader is reaped (`-PID`, see `LiveGroups`); at EOF (this process is gone, however it
/// ended) the keeper SIGKILLs every group still listed and exits. It works alike on Linux and
/// macOS. `PR_SET_PDEATHSIG` was not chosen: posix_spawn runs no code in the child before exec,
/// the signal reaches only the group's leader and not its descendants, it fires when the
/// spawning *thread* ends (our spawning queue's threads come and go), and macOS lacks it.
///
/// The keeper ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT and leaves our process group, so a
/// Ctrl-C or a hang-up meant for us leaves it watching our orderly stop.
///
/// A group spawned in the instant before its `+PID` line was written would escape the list
/// if this process died right then; so every group spawned while a keeper listens starts
/// with `SKYNET_OWNER_PID` (this process's id) in its environment, and at EOF the keeper also
/// kills, on Linux, every process whose environment names its owner (`killMarked`).
package enum GroupKeeper {
    /// The variable naming the process that spawned a job's group (see `killMarked`).
    package static let ownerVariable = "SKYNET_OWNER_PID"
    /// The hidden `skynet` command that runs a keeper.
    package static let command = "group-keeper"
    /// The running keeper, kept so that its reaper thread reaps it.
    private static let keeper = Locked<ChildProcess?>(nil)

    /// Whether a keeper watches this process's groups.
    package static var isRunning: Bool { keeper.withLock { $0 != nil } }

    /// Starts `executable group-keeper` (once; later calls do nothing). Blocking (posix_spawn):
    /// call it off the cooperative pool, before the first job is spawned.
    package static func start(executable: String) throws(ChildProcessError) {
        try keeper.withLock { (keeper: inout ChildProcess?) throws(ChildProcessError) in
            guard keeper == nil else { return }
            // A keeper that died makes our next line to it fail with EPIPE, not kill us.
            signal(SIGPIPE, SIG_IGN)
            let (read, write) = try Spawner.makePipe()
            var options = ChildProcess.Options(arguments: [command, String(getpid())])
            options.descriptors = [3: read]
            do throws(ChildProcessError) {
                keeper = try ChildProcess.spawn(executable, options)
            } catch {
                close(read)
                close(write)
                throw error
            }
            close(read)
            LiveGroups.attachKeeper(write)
        }
    }

    /// The keeper's life (`skynet group-keeper`): reads `+PID` / `-PID` lines from `descriptor`
    /// until EOF, then SIGKILLs every group still listed. Blocking: on a thread of its own.
    /// Returns the exit status.
    /// `owner` is the process whose jobs these are (given on the command line: by the time the
    /// keeper asks for its parent, that parent may already be gone).
    package static func run(owner: pid_t, descriptor: Int32 = 3) -> Int32 {
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { signal(number, SIG_IGN) }
        _ = setpgid(0, 0)
        var groups = Set<pid_t>()
        var lines = LineFramer(maxLineBytes: 32, overLong: .truncate)  // our lines are short; the rest of a longer one is dropped
        readChunks(from: descriptor, chunkSize: 4096) { chunk in
            lines.split(chunk) { piece in
                guard case .line(let line) = piece, let sign = line.first,
                      let pid = pid_t(String(decoding: line.dropFirst(), as: UTF8.self)), pid > 1 else { return }
                if sign == UInt8(ascii: "+") { groups.insert(pid) } else if sign == UInt8(ascii: "-") { groups.remove(pid) }
            }
            return true
        }
        for group in groups { _ = kill(-group, SIGKILL) }
        killMarked(owner: owner)
        return 0
    }
}
