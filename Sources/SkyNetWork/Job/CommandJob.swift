import Dispatch
import SkyNetRuntime

/// A job that runs a command the operator declared, once per task, never through a shell.
///
/// Each task runs `command.arguments(input:sector:slot:)` as argv (the program looked up in PATH
/// when it holds no slash) in a process group of its own, with stdin from /dev/null and this
/// process's environment minus every `SKYNET_TOKEN*` variable and systemd's `NOTIFY_SOCKET`,
/// `WATCHDOG_USEC`, `WATCHDOG_PID` and `CREDENTIALS_DIRECTORY`, plus `SKYNET_INPUT`,
/// `SKYNET_SECTOR` and `SKYNET_JOB`. Its stdout, one trailing newline removed, is the result;
/// it must be UTF-8 text of at most `maxOutput` bytes. Exit status ≠ 0, death by a signal, a
/// program that cannot start and output over the bound fail the task (`task-failed`), naming
/// the cause and the last line of stderr. When the command exits, what is left of its group is
/// killed: a task's processes end with it. Cancelled (deadline, `cancel`, lost connection), it
/// sends SIGTERM to the group, SIGKILL after `killGrace`, reaps, then throws `CancellationError`.
package struct CommandJob: Job {
    /// The default bound on a task's output: 256 KiB.
    package static let defaultMaxOutput = 262_144
    /// How much of stderr's end is kept for the failure message.
    static let stderrTail = 4096

    /// The job's name, as `SKYNET_JOB` tells the command.
    package let name: String
    package let command: CommandTemplate
    /// The most bytes of stdout a task may give (its trailing newline aside).
    package let maxOutput: Int
    /// How long a cancelled command has between SIGTERM and SIGKILL.
    package let killGrace: Duration
    /// The environment every task starts from: this process's, without any token.
    let environment: [String: String]

    package var summary: String { command.text }

    /// Where command jobs are spawned: a serial queue of its own, off the cooperative pool.
    private static let spawner = DispatchQueue(label: "skynet-spawn")

    package init(name: String, command: CommandTemplate, maxOutput: Int = CommandJob.defaultMaxOutput, killGrace: Duration = .seconds(2)) {
        self.init(name: name, command: command, maxOutput: maxOutput, killGrace: killGrace,
                  environment: ProcessInfo.processInfo.environment)
    }

    /// As the public init, but starting from `environment` instead of this process's (tests).
    init(name: String, command: CommandTemplate, maxOutput: Int, killGrace: Duration, environment: [String: String]) {
        self.name = name
        self.command = command
        self.maxOutput = max(0, maxOutput)
        self.killGrace = killGrace
        self.environment = environment.filter { !Self.isWithheld($0.key) }
    }

    /// The variables a task never inherits: any token, and systemd's channel to this process
    /// (a job that wrote to `NOTIFY_SOCKET` could claim the node ready or stopping; its
    /// watchdog and credentials directory are ours too).
    static func isWithheld(_ name: String) -> Bool {
        name.hasPrefix("SKYNET_TOKEN") || Self.serviceVariables.contains(name)
    }

    /// What systemd gives the service it starts, for that process only.
    static let serviceVariables: Set<String> = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "CREDENTIALS_DIRECTORY"]

    package func run(_ request: JobRequest) async throws -> String {
        try Task.checkCancellation()
        // posix_spawn holds its caller until the child has exec'd (far longer under a
        // sanitizer): never on the cooperative pool. One long-lived queue of its own spawns for
        // every command job of the process; a new thread per spawn cost 12 % of W8.
        // The child crosses from the queue to this task under a lock: a hand-over that
        // ThreadSanitizer can see (through the continuation alone it reported a race).
        let handOver = Locked<Result<ChildProcess, ScanFailure>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Self.spawner.async { [self] in
                let started: Result<ChildProcess, ScanFailure>
                do throws(ScanFailure) { started = .success(try start(request)) } catch { started = .failure(error) }
                handOver.withLock { $0 = started }
                continuation.resume()
            }
        }
        guard let started = handOver.withLock({ $0 }) else { throw CancellationError() }
        let child = try started.get()
        let grace = killGrace
        let ended = await withTaskCancellationHandler {
            // Not cancellable on purpose: a cancelled task still waits until its child is reaped.
            await child.exit.value
        } onCancel: {
            Task { await child.stop(grace: grace) }
        }
        // The group was killed before the reap (endGroupOnExit); a process that left it and
        // still holds stdout gets this long before reading is given up.
        child.abandonOutput(after: grace)
        let output = await child.capturedOutput ?? CapturedOutput()
        if Task.isCancelled { throw CancellationError() }
        return try Self.result(of: ended, output: output, maxOutput: maxOutput)
    }

    /// Starts the task's command, or fails the task saying why it cannot start.
    private func start(_ request: JobRequest) throws(ScanFailure) -> ChildProcess {
        // A C string ends at NUL: such an input would arrive cut, so it is refused whole.
        guard !request.input.utf8.contains(0) else {
            throw ScanFailure(code: .taskFailed, message: "the input holds a NUL byte, which no argument can carry")
        }
        let argv = command.arguments(input: request.input, sector: request.sector, slot: request.slot)
        let program = argv.first ?? command.program
        var variables = environment
        variables["SKYNET_INPUT"] = request.input
        variables["SKYNET_SECTOR"] = String(request.sector)
        variables["SKYNET_JOB"] = name
        var options = ChildProcess.Options(arguments: Array(argv.dropFirst()), environment: variables)
        // One byte more than the bound: room for the trailing newline that is not counted.
        options.stdout = .bytes(limit: maxOutput + 1)
        options.stderr = .tail(bytes: Self.stderrTail)
        options.ownProcessGroup = true
        options.endGroupOnExit = true
        options.searchPath = !program.contains("/")
        // A task that came with its files runs in their work directory: `{}` names the copy.
        options.workingDirectory = request.workingDirectory
        do {
            return try ChildProcess.spawn(program, options)
        } catch {
            // E2BIG: one word of the command, made long by the input, is over the kernel's
            // limit on one argument; say so rather than blame the program.
            let reason = error.code == E2BIG
                ? "an argument or the environment is too long (Linux allows under 131072 bytes in one)"
                : String(cString: strerror(error.code))
            throw ScanFailure(code: .taskFailed, message: "cannot run '\(program)': \(reason)")
        }
    }
}
