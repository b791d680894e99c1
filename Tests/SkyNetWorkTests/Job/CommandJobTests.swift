import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// The command job: argv without a shell, the environment, results and failures, bounds,
/// cancellation of the whole group, and nothing left behind.
@Suite struct CommandJobTests {
    private func job(
        _ command: String, name: String = "test", maxOutput: Int = CommandJob.defaultMaxOutput,
        killGrace: Duration = .seconds(2), environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> CommandJob {
        CommandJob(name: name, command: try CommandTemplate(command), maxOutput: maxOutput, killGrace: killGrace, environment: environment)
    }

    private func run(_ job: CommandJob, _ input: String, sector: Int = 0) async throws -> String {
        try await withTimeout(.seconds(30)) { try await job.run(JobRequest(sector: sector, input: input)) }
    }

    /// The failure a task ends with (nil: it succeeded).
    private func failure(_ job: CommandJob, _ input: String) async throws -> ScanFailure? {
        do {
            _ = try await run(job, input)
            return nil
        } catch let failure as ScanFailure {
            return failure
        }
    }

    @Test func aRequestWithAWorkingDirectoryRunsThereSoARelativeInputNamesTheFileThere() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-cwd-\(UUID())")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("photos"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("in the work dir".utf8).write(to: directory.appendingPathComponent("photos/a.txt"))
        let request = JobRequest(sector: 0, input: "photos/a.txt", workingDirectory: directory.path)
        #expect(request.inSlot(2).workingDirectory == directory.path)
        let output = try await withTimeout(.seconds(30)) { try await job("cat {}").run(request) }
        #expect(output == "in the work dir")
    }

    @Test func theOutputIsWhatTheCommandPrintsWithoutItsTrailingNewline() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-cmd-\(UUID()).txt")
        try Data("hello".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let digest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        #expect(try await run(job("sha256sum {}"), file.path) == "\(digest)  \(file.path)")
        #expect(try await run(job("sha256sum"), file.path) == "\(digest)  \(file.path)")  // appended
        #expect(try await run(job("printf '%s|%s\\n\\n' {} {#}"), "in", sector: 41) == "in|41\n")
        #expect(try await run(job("printf ''"), "x") == "")
    }

    @Test func aThousandTrickyInputsArriveByteExactAsArgumentsAndInTheEnvironment() async throws {
        let pieces = [" ", "  two  spaces", "'", "\"", "$(touch /tmp/skynet-pwned)", "`id`", ";", "; rm -rf /", "*", "?",
                      "-n", "--help", "ünïcödé", "日本語", "e\u{301}", "😀", "\\", "\t", "{}", "$HOME", "|", "&", ">x", "#"]
        var inputs: [String] = []
        for index in 0..<1000 {
            // Deterministic mixes of 1 to 4 pieces, some led by "-".
            var text = index % 7 == 0 ? "-" : ""
            for step in 0...(index % 4) { text += pieces[(index * 7 + step * 13) % pieces.count] }
            inputs.append(text + String(index))
        }
        let argv = try job("printf %s {}"), environment = try job("sh -c 'printenv SKYNET_INPUT' {}")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, input) in inputs.enumerated() {
                if index >= 4 { try await group.next() }
                group.addTask {
                    let echoed = try await run(argv, input, sector: index)
                    let fromEnvironment = try await run(environment, input, sector: index)
                    #expect(Array(echoed.utf8) == Array(input.utf8))
                    #expect(Array(fromEnvironment.utf8) == Array(input.utf8))
                }
            }
            try await group.waitForAll()
        }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/skynet-pwned"))
    }

    @Test func theEnvironmentHoldsNoTokenAndNamesTheTask() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["SKYNET_TOKEN"] = "secret-token"
        environment["SKYNET_TOKEN_FILE"] = "/secret/file"
        environment["SKYNET_KEEP_ME"] = "kept"
        let output = try await run(job("sh -c env {}", name: "envjob", environment: environment), "the input", sector: 7)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.hasPrefix("SKYNET_TOKEN") })
        #expect(!output.contains("secret"))
        #expect(lines.contains("SKYNET_KEEP_ME=kept"))
        #expect(lines.contains("SKYNET_INPUT=the input"))
        #expect(lines.contains("SKYNET_SECTOR=7"))
        #expect(lines.contains("SKYNET_JOB=envjob"))
        // The public initializer starts from this process's environment, tokens removed.
        let plain = CommandJob(name: "plain", command: try CommandTemplate("env"))
        #expect(plain.environment["PATH"] == ProcessInfo.processInfo.environment["PATH"])
        #expect(!plain.environment.keys.contains { $0.hasPrefix("SKYNET_TOKEN") })
    }

    @Test func aFailingExitNamesTheStatusAndTheLastLineOfStderr() async throws {
        let shell = try job("sh -c {}")
        let named = try await failure(shell, "echo first >&2; echo '  no such file ' >&2; echo >&2; exit 3")
        #expect(named == ScanFailure(code: "task-failed", message: "exit status 3: no such file"))
        #expect(try await failure(shell, "exit 4")?.message == "exit status 4")
        // Only the tail of a long stderr is kept; its last line still names the cause.
        let long = try await failure(shell, "head -c 1000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo the end >&2; exit 1")
        #expect(long?.message == "exit status 1: the end")
    }

    @Test func deathBySignalNamesTheSignal() async throws {
        let failed = try await failure(job("sh -c {}"), "kill -9 $$")
        #expect(failed == ScanFailure(code: "task-failed", message: "killed by signal 9 (SIGKILL)"))
    }

    /// The longest input a task may carry runs (as an argument and in the environment); a word
    /// the input makes longer than Linux allows one argument fails saying so.
    @Test func theLongestInputRunsAndATooLongArgumentSaysWhy() async throws {
        let longest = String(repeating: "a", count: ScanTask.maxTextBytes)
        #expect(try await run(job("printf %s {}"), longest) == longest)
        let doubled = try await failure(job("echo {}{}"), longest)
        #expect(doubled == ScanFailure(code: "task-failed",
                                       message: "cannot run 'echo': an argument or the environment is too long (Linux allows under 131072 bytes in one)"))
    }

    @Test func aProgramThatCannotRunSaysWhy() async throws {
        let missing = try await failure(job("skynet-no-such-program {}"), "a")
        #expect(missing == ScanFailure(code: "task-failed", message: "cannot run 'skynet-no-such-program': No such file or directory"))
        let path = try await failure(job("/nonexistent/convert {}"), "a")
        #expect(path?.message == "cannot run '/nonexistent/convert': No such file or directory")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-plain-\(UUID())").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("text".utf8), attributes: [.posixPermissions: 0o644]))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let notExecutable = try await failure(job("\(file) {}"), "a")
        #expect(notExecutable?.message == "cannot run '\(file)': Permission denied")
    }

    @Test func outputOverTheBoundFailsAndNeverComesBackCut() async throws {
        let shell = try job("sh -c {}", maxOutput: 1000)
        #expect(try await run(shell, "head -c 1000 /dev/zero | tr '\\0' a; echo").utf8.count == 1000)
        let over = try await failure(shell, "head -c 1001 /dev/zero | tr '\\0' a")
        #expect(over == ScanFailure(code: "task-failed", message: "output over 1000 bytes (--max-output)"))
        // A command that never stops writing is killed, not waited for.
        let endless = try await failure(job("yes"), "y")
        #expect(endless?.message == "output over 262144 bytes (--max-output)")
    }

    @Test func outputThatIsNotUTF8FailsClearly() async throws {
        let failed = try await failure(job("printf {}"), "ab\\377c")
        #expect(failed?.message == "output is not UTF-8 text (invalid byte at offset 2); encode binary output, e.g. with base64")
    }

    @Test func anInputWithANulByteIsRefused() async throws {
        #expect(try await failure(job("printf %s {}"), "a\u{0}b")?.code == "task-failed")
    }

    @Test func cancellationKillsTheWholeGroupGrandchildrenToo() async throws {
        let fifo = try makeFifo()
        defer { unlink(fifo) }
        let shell = try job("sh -c {}", killGrace: .seconds(2))
        let task = Task { try await shell.run(JobRequest(sector: 0, input: "sleep 300 & sleep 300 & echo $$ > \(fifo); wait")) }
        let group = try await readGroup(from: fifo, cancelling: task)
        #expect(ProcessTable.members(of: group).count >= 3)  // sh and both sleeps
        let clock = ContinuousClock(), start = clock.now
        task.cancel()
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(clock.now - start < .seconds(30))  // far below the sleeps' 300 s (17 s seen at a load average of 25)
        #expect(try await ProcessTable.awaitEmpty(group))
    }

    @Test func aCommandThatIgnoresSIGTERMIsKilledAfterTheGrace() async throws {
        let fifo = try makeFifo()
        defer { unlink(fifo) }
        let shell = try job("sh -c {}", killGrace: .milliseconds(300))
        let task = Task {
            try await shell.run(JobRequest(sector: 0, input: "trap '' TERM; sleep 60 & echo $$ > \(fifo); while :; do sleep 1; done"))
        }
        let group = try await readGroup(from: fifo, cancelling: task)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await withTimeout(.seconds(20)) { try await task.value } }
        #expect(try await ProcessTable.awaitEmpty(group))
    }

    @Test func backgroundProcessesEndWithTheirCommand() async throws {
        // The sleep holds stdout open: without the group kill the task would last 300 s (the
        // bound is generous for a loaded machine: 26 s seen at a load average of 25).
        let clock = ContinuousClock(), start = clock.now
        #expect(try await run(job("sh -c {}"), "sleep 300 & echo done") == "done")
        #expect(clock.now - start < .seconds(60))
    }

    @Test func aJobSeesOnlyTheStandardDescriptors() async throws {
        // A descriptor of ours without close-on-exec: it must not reach the job all the same.
        let stray = open("/dev/null", O_RDONLY)
        #expect(stray > 2)
        defer { close(stray) }
        let listing = try await run(job("sh -c 'exec ls /proc/self/fd' {}"), "")
        // 3 is the directory ls itself opened to list them.
        #expect(listing.split(separator: "\n") == ["0", "1", "2", "3"])
        let strayPath = try await failure(job("sh -c 'exec readlink /proc/self/fd/\(stray)' {}"), "")
        #expect(strayPath?.message.hasPrefix("exit status 1") == true)
    }

    @Test func tenThousandShortTasksLeaveNoZombieAndNoDescriptor() async throws {
        let before = openDescriptors()
        let truth = try job("/bin/true")
        let done = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Two at a time: enough to overlap spawns, light enough for the suites beside it.
            for index in 0..<10_000 {
                if index >= 2 { try await group.next() }
                group.addTask {
                    _ = try await withTimeout(.seconds(30)) { try await truth.run(JobRequest(sector: index, input: "")) }
                    done.increment()
                }
            }
            try await group.waitForAll()
        }
        #expect(done.value == 10_000)
        #expect(ProcessTable.zombieChildren().isEmpty)
        // Suites running beside this one open and close descriptors meanwhile, so the bound
        // allows some and waits for theirs to close; a leak of one per task is 10,000.
        #expect(await descriptors(atMost: before + 50, within: .seconds(10)) <= before + 50)
    }

    private func makeFifo() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-fifo-\(UUID())").path
        guard mkfifo(path, 0o600) == 0 else { throw ChildProcessError("mkfifo \(path)", code: errno) }
        return path
    }

    /// Waits (on a thread of its own, blocking on the FIFO) for the group id the command writes.
    private func readGroup(from fifo: String, cancelling task: Task<String, any Error>) async throws -> Int32 {
        let text: String
        do {
            text = try await withTimeout(.seconds(20)) {
                try await onOwnThread(named: "test-fifo") { readAll(fifo) }
            }
        } catch {
            task.cancel()
            throw error
        }
        let group = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(group > 1)
        return group
    }
}

/// What /proc says about processes: groups, our zombies, our descriptors.
enum ProcessTable {
    /// (pid, state, parent, group) of every process, from /proc/PID/stat.
    static func all() -> [(pid: Int32, state: Substring, parent: Int32, group: Int32)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { name in
            guard let pid = Int32(name),
                  let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 3,
                  let parent = Int32(fields[1]), let group = Int32(fields[2]) else { return nil }
            return (pid, fields[0], parent, group)
        }
    }

    /// The live (not zombie) processes of a process group.
    static func members(of group: Int32) -> [Int32] {
        all().filter { $0.group == group && $0.state != "Z" }.map(\.pid)
    }

    /// Waits (up to 10 s) until no live process is left in `group`; true when none is.
    /// SIGKILL is delivered asynchronously, so the table is re-read until it agrees.
    static func awaitEmpty(_ group: Int32) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !members(of: group).isEmpty {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(10))  // polling the process table, bounded, not spinning
        }
        return true
    }

    /// Our children that have exited and were never reaped.
    static func zombieChildren() -> [Int32] {
        let me = getpid()
        return all().filter { $0.parent == me && $0.state == "Z" }.map(\.pid)
    }
}

/// Reads a file (a FIFO: blocks until a writer opens and closes it) to its end.
private func readAll(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 256)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
