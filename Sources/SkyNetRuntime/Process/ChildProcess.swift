/// A child process started with `posix_spawn`: argv without a shell, stdin/stdout/stderr
/// from /dev/null, a file, a descriptor or a pipe, optionally a process group of its own.
///
/// It is reaped once an event loop sees its pidfd say it exited (where there is no pidfd, or
/// with captured outputs, a thread of its own reaps it: `waitpid` never runs on the
/// cooperative pool), and `exit` is fulfilled; `.lines` outputs are read on the event loops
/// into a `LineLog`. Every pipe end
/// the parent keeps is close-on-exec, and every one is closed by the time the child is reaped
/// and its output has ended: no zombie, no leaked descriptor. Signals go only to a child that
/// has not been reaped yet (its pid cannot have been reused).
package final class ChildProcess: Sendable {
    /// Where the child's stdin comes from.
    package enum Input: Sendable {
        case null
        case file(String)
        /// A pipe whose write end the parent holds until the child is reaped. Nothing is
        /// written to it: the child sees EOF when the parent is gone.
        case pipe
        /// A descriptor of this process (it stays the caller's).
        case descriptor(Int32)
    }

    /// Where the child's stdout or stderr goes.
    package enum Output: Sendable {
        case null
        /// This process's own stdout or stderr.
        case inherit
        case file(String, append: Bool)
        /// A descriptor of this process (it stays the caller's).
        case descriptor(Int32)
        /// Read line by line on an event loop into a `LineLog`; longer lines are cut at
        /// `maxLength` bytes, and at most `keep` lines are kept.
        case lines(maxLength: Int = 64 * 1024, keep: Int = 10_000)
        /// A pipe whose read end the caller takes with `takeOutputPipe` and must close.
        case pipe
        /// Read whole, as bytes, into `capturedOutput`, up to `limit` bytes: past it reading
        /// stops and the child (its whole group, if it has one) is killed, never a silent cut.
        case bytes(limit: Int)
        /// Read to the end, keeping only the last `bytes` bytes, into `capturedOutput`.
        case tail(bytes: Int)
    }

    /// What to start and how.
    package struct Options: Sendable {
        package var arguments: [String]
        /// The whole environment; nil: this process's.
        package var environment: [String: String]?
        package var stdin: Input = .null
        package var stdout: Output = .null
        package var stderr: Output = .null
        /// A process group of its own (`POSIX_SPAWN_SETPGROUP`): `signalGroup` and `stop`
        /// then reach its descendants too.
        package var ownProcessGroup = false
        /// Look the executable up in PATH when it holds no slash.
        package var searchPath = false
        package var workingDirectory: String?
        /// When the child exits, kill what is left of its process group (SIGKILL) before
        /// reaping it: the zombie still holds the group's id then, so the signal cannot reach
        /// anyone else's processes. With `ownProcessGroup`: its background descendants end
        /// with it and cannot hold its outputs open.
        package var endGroupOnExit = false
        /// Extra descriptors the child gets, beyond stdin/stdout/stderr: child descriptor ←
        /// a descriptor of this process (it stays the caller's, who closes it after the
        /// spawn). Targets must be 3 or more; e.g. `[3: commandsRead, 4: repliesWrite]` for
        /// Chromium's `--remote-debugging-pipe`. Every other descriptor above 2 is closed
        /// in the child, as without this option.
        package var descriptors: [Int32: Int32] = [:]

        package init(arguments: [String] = [], environment: [String: String]? = nil) {
            self.arguments = arguments
            self.environment = environment
        }
    }

    private enum State {
        /// Not reaped yet (a zombie at most): its pid, and its group's id, are still its own.
        /// `endGroup`: `stop` asked for the group to be killed when the child exits.
        case running(stdinWriter: Int32?, endGroup: Bool = false)
        case reaped(ChildExit)
    }

    package let pid: Int32
    /// How it ended, once it has been reaped.
    package let exit = AsyncSignal<ChildExit>()
    /// Its stdout / stderr lines, for `.lines` outputs.
    package let stdoutLines: LineLog?
    package let stderrLines: LineLog?
    package let ownProcessGroup: Bool
    private let endGroupOnExit: Bool
    /// The reader of `.bytes` / `.tail` outputs (one thread for both), if there are any.
    private let capture: OutputCapture?
    private let state: Locked<State>
    private let pipes: Locked<(stdout: Int32?, stderr: Int32?)>

    /// Starts `executable` (a path; with `searchPath`, a name looked up in PATH).
    package static func spawn(_ executable: String, _ options: Options) throws(ChildProcessError) -> ChildProcess {
        let (pid, ends) = try Spawner.spawn(executable, options)
        if options.ownProcessGroup { LiveGroups.add(pid) }
        return ChildProcess(pid: pid, ends: ends, options: options)
    }

    private init(pid: Int32, ends: Spawner.ParentEnds, options: Options) {
        self.pid = pid
        ownProcessGroup = options.ownProcessGroup
        endGroupOnExit = options.endGroupOnExit && options.ownProcessGroup
        state = Locked(.running(stdinWriter: ends.stdin))
        func log(_ output: Output, _ fd: Int32?, _ name: String) -> (LineLog?, Int32?) {
            guard case .lines(let maxLength, let keep) = output, let fd else { return (nil, fd) }
            let log = LineLog(keep: keep)
            readLines(from: fd, maxLength: maxLength, into: log, orOnThread: "skynet-child-\(name)")
            return (log, nil)
        }
        let (outLog, outPipe) = log(options.stdout, ends.stdout, "stdout")
        let (errLog, errPipe) = log(options.stderr, ends.stderr, "stderr")
        stdoutLines = outLog
        stderrLines = errLog
        var streams: [OutputCapture.Stream] = []
        func captured(_ output: Output, _ fd: Int32?, _ number: Int32) -> Int32? {
            guard let fd else { return nil }
            switch output {
            case .bytes(let limit): streams.append(.init(fd: fd, number: number, limit: max(0, limit), keepsTail: false))
            case .tail(let bytes): streams.append(.init(fd: fd, number: number, limit: max(0, bytes), keepsTail: true))
            default: return fd
            }
            return nil
        }
        pipes = Locked((captured(options.stdout, outPipe, 1), captured(options.stderr, errPipe, 2)))
        capture = streams.isEmpty ? nil : OutputCapture()
        // An event loop waits for the exit (a pidfd) and the loops read the captured outputs;
        // without that, one thread reads the outputs and reaps the child (with a pidfd it can
        // poll), or, with no captured output, a thread of its own reaps it.
        let pidfd = GNU.pidfdOpen.map { $0(pid, 0) }.flatMap { $0 >= 0 ? $0 : nil }
        let watched = pidfd.map { pidfd in EventLoop.whenExited(pidfd: pidfd) { [self] in reap() } } ?? false
        let capturedStreams = streams
        if watched {
            capture?.startOnLoops(capturedStreams, overflow: { [self] in killIfRunning() })
        } else if let capture {
            // The capture thread also polls the pidfd, when there is one, and reaps then.
            startThread(named: "skynet-child-output") { [self] in
                capture.run(capturedStreams, exitDescriptor: pidfd, exited: { reap() }, overflow: { killIfRunning() })
            }
            if pidfd == nil { startThread(named: "skynet-reaper") { [self] in reap() } }
        } else {
            if let pidfd { close(pidfd) }
            startThread(named: "skynet-reaper") { [self] in reap() }
        }
    }

    /// What the `.bytes` and `.tail` outputs held, once every process holding them has closed
    /// them (or reading was abandoned); nil when the child has no such output.
    package var capturedOutput: CapturedOutput? {
        get async {
            guard let capture else { return nil }
            return await capture.result.value
        }
    }

    /// Stops reading the captured outputs `grace` from now if they are still open then (a
    /// process outside the child's group may hold them); `capturedOutput` says so.
    package func abandonOutput(after grace: Duration) {
        capture?.abandon(after: grace)
    }

    /// Kills the child (its group, if it has one) unless it has been reaped: a `.bytes`
    /// output passed its limit.
    private func killIfRunning() {
        state.withLock { state in
            guard case .running = state else { return }
            _ = kill(ownProcessGroup ? -pid : pid, SIGKILL)
        }
    }

    /// Takes the read end of a `.pipe` output (1: stdout, 2: stderr); the caller closes it.
    package func takeOutputPipe(_ stream: Int32) -> Int32? {
        pipes.withLock { pipes in
            defer { if stream == 1 { pipes.stdout = nil } else { pipes.stderr = nil } }
            return stream == 1 ? pipes.stdout : pipes.stderr
        }
    }

    /// Sends `signal` to the child alone, unless it has been reaped already.
    package func send(_ signal: Int32) {
        state.withLock { state in
            if case .running = state { _ = kill(pid, signal) }
        }
    }

    /// Sends `signal` to the child's whole process group (its own group only; otherwise to
    /// the child alone). Descendants are reached even after the child itself has exited.
    package func signalGroup(_ signal: Int32) {
        guard ownProcessGroup else { return send(signal) }
        // Only before the reap: once reaped, a group that emptied may have given its id to
        // another process's new group (pids wrap: 32768 here), which the signal would hit.
        state.withLock { state in
            if case .running = state { _ = kill(-pid, signal) }
        }
    }

    /// Asks the child to stop (SIGTERM, to its group if it has one), waits up to `grace` for
    /// it to exit, then kills it (SIGKILL); a group of its own is killed whole at the end, so
    /// no descendant outlives it. Returns how it ended.
    @discardableResult
    package func stop(grace: Duration = .seconds(5)) async -> ChildExit {
        if ownProcessGroup {
            // Its group is killed whole when it exits, at the reap, while the id is still its own.
            state.withLock { state in
                if case .running(let writer, _) = state { state = .running(stdinWriter: writer, endGroup: true) }
            }
        }
        if exit.current == nil {
            signalGroup(SIGCONT)  // a stopped process cannot act on SIGTERM
            signalGroup(SIGTERM)
            let exit = self.exit
            if (try? await withTimeout(grace) { await exit.value }) == nil {
                signalGroup(SIGKILL)
            }
        }
        return await exit.value
    }

    /// Waits (up to `timeout`) for a stdout line that satisfies `predicate`. Throws
    /// `TimeoutError`, or `ChildProcessError` when stdout closes first (the child ended).
    @discardableResult
    package func waitForLine(
        timeout: Duration, where predicate: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        guard let log = stdoutLines else { throw ChildProcessError("stdout is not read as lines", code: EINVAL) }
        guard let line = try await withTimeout(timeout, { await log.first(where: predicate) }) else {
            throw ChildProcessError("process \(pid) closed its output before the awaited line", code: EPIPE)
        }
        return line
    }

    /// Runs on the reaper thread (or the output thread, once the pidfd says the child exited):
    /// waits for the exit without reaping (WNOWAIT), then reaps under the lock, so `send` never
    /// signals a pid that may belong to someone else.
    private func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
            guard errno == EINTR else { break }
        }
        let (ended, writer) = state.withLock { state -> (ChildExit, Int32?) in
            if case .running(_, let endGroup) = state, endGroup || endGroupOnExit { _ = kill(-pid, SIGKILL) }
            // Unlisted before the reap: while listed, the group's id is still this child's.
            if ownProcessGroup { LiveGroups.remove(pid) }
            var status: Int32 = 0
            var usage = rusage()
            var result: pid_t
            repeat { result = wait4(pid, &status, 0, &usage) } while result < 0 && errno == EINTR
            let ended = result == pid ? ChildExit(waitStatus: status, usage: usage) : ChildExit(reason: .exited(-1), peakResidentKiB: 0)
            var writer: Int32?
            if case .running(let stdinWriter, _) = state { writer = stdinWriter }
            state = .reaped(ended)
            return (ended, writer)
        }
        if let writer { close(writer) }
        exit.fulfil(ended)
    }

    deinit {
        // Read ends of `.pipe` outputs nobody took.
        let (out, err) = pipes.withLock { $0 }
        for fd in [out, err].compactMap({ $0 }) { close(fd) }
    }
}

/// Reads `fd` to its end line by line into `log` (each cut to `maxLength` bytes), then closes
/// both: on one of the process's event loops, or, when no loop can watch `fd`, on a thread of
/// its own named `thread`.
func readLines(from fd: Int32, maxLength: Int, into log: LineLog, orOnThread thread: String) {
    let lines = PipeLines(maxLength: maxLength, log: log)
    if EventLoop.readPipe(fd, chunk: { lines.take($0) }, end: { lines.finish() }) != nil { return }
    startThread(named: thread) {
        readChunks(from: fd) { lines.take($0); return true }
        close(fd)
        lines.finish()
    }
}

/// The framing of one pipe read as lines. Unchecked: one reader at a time touches it (a
/// loop's thread, or the one reading thread).
private final class PipeLines: @unchecked Sendable {  // safe without a lock: only its one reader touches it
    private var framer: LineFramer
    private let log: LineLog

    init(maxLength: Int, log: LineLog) {
        framer = LineFramer(maxLineBytes: maxLength, overLong: .truncate)
        self.log = log
    }

    func take(_ chunk: UnsafeRawBufferPointer) {
        framer.split(chunk) { [log] piece in
            if case .line(let bytes) = piece { log.append(String(decoding: bytes, as: UTF8.self)) }
        }
    }

    func finish() {
        framer.finish { [log] piece in
            if case .line(let bytes) = piece { log.append(String(decoding: bytes, as: UTF8.self)) }
        }
        log.close()
    }
}

func readLines(from fd: Int32, maxLength: Int, into log: LineLog) {
    var lines = LineFramer(maxLineBytes: maxLength, overLong: .truncate)
    let append = { (piece: LineFramer.Piece) in
        if case .line(let bytes) = piece { log.append(String(decoding: bytes, as: UTF8.self)) }
    }
    readChunks(from: fd) { lines.split($0, append); return true }
    lines.finish(append)
    close(fd)
    log.close()
}
