import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// The built `skynet node --stdio` over pipes, as `scan --ssh` runs it behind an SSH login
/// (no ssh here: the pipes stand for the channel). It speaks the protocol on stdout and
/// nothing else, and it leaves nothing behind: when its stdin closes (the coordinator's end,
/// however it ended) it exits within about a second and its jobs' process groups are gone.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeStdioProcessTests {
    let groups = ProcessTests.JobProcessGroupTests()

    /// A running `skynet node --stdio`: stdin is a pipe whose write end the test holds (or
    /// hands on), stdout and stderr are read as lines.
    final class StdioNode: Sendable {
        let child: ChildProcess
        /// The write end of the node's stdin, until `closeInput`.
        let input: Int32
        /// Whether `closeInput` has run: a descriptor closed twice may be another test's by
        /// then (every suite shares this process), which an `EBADF` elsewhere once showed.
        private let inputOpen = Locked(true)

        init(_ arguments: [String], environment: [String: String] = [:], stdout: ChildProcess.Output = .lines(keep: 10_000)) throws {
            let pipe = try ChildProcess.makePipe()
            var options = ChildProcess.Options(arguments: ["node", "--stdio"] + arguments,
                                               environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            options.stdin = .descriptor(pipe.read)
            options.stdout = stdout
            options.stderr = .lines(keep: 10_000)
            do {
                child = try ChildProcess.spawn(skynetBinary.path, options)
            } catch {
                close(pipe.read)
                close(pipe.write)
                throw error
            }
            close(pipe.read)
            input = pipe.write
        }

        /// Closes the node's stdin (once, however often it is called).
        func closeInput() {
            if inputOpen.withLock({ open in defer { open = false }; return open }) { close(input) }
        }

        func send(_ line: String) {
            _ = Array((line + "\n").utf8).withUnsafeBytes { writeFully($0, to: input) }
        }

        /// The first stdout line that satisfies `predicate`, waited for up to 30 s.
        func line(where predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
            let log = child.stdoutLines
            guard let line = try await withTimeout(.seconds(30), { await log?.first(where: predicate) }) else {
                throw ProcessEnded(lines: (child.stdoutLines?.lines ?? []) + (child.stderrLines?.lines ?? []))
            }
            return line
        }

        /// How long the node took to exit after `start`, and how; killed after 10 s.
        func exit(since start: ContinuousClock.Instant) async throws -> (Duration, ChildExit) {
            let child = self.child
            let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
            return (ContinuousClock.now - start, exit)
        }
    }

    /// Runs `body` with a node started with `arguments`; the node is killed on every path.
    func withStdioNode<T>(_ arguments: [String], environment: [String: String] = [:], stdout: ChildProcess.Output = .lines(keep: 10_000),
                          _ body: (StdioNode) async throws -> T) async throws -> T {
        let node = try StdioNode(arguments, environment: environment, stdout: stdout)
        defer { node.closeInput() }
        do {
            let result = try await body(node)
            await node.child.stop(grace: .zero)
            return result
        } catch {
            await node.child.stop(grace: .zero)
            throw error
        }
    }

    static let hello = #"{"type":"hello","version":1,"name":"coordinator"}"#

    static func job(_ name: String, id: Int, input: String) -> String {
        #"{"type":"job","id":\#(id),"job":"\#(name)","task":{"id":"\#(UUID().uuidString)","sector":\#(id),"input":"\#(input)"}}"#
    }

    /// How a test ends the node.
    enum Ending: String, CaseIterable, Sendable {
        /// Its stdin closes (the coordinator closed the channel).
        case stdinClosed
        /// The same, while the job ignores SIGTERM: the node's SIGKILL must reach it in time.
        case stdinClosedUnderAJobIgnoringSIGTERM
        /// SIGTERM to the node.
        case sigterm
    }

    /// Stdin closed (or SIGTERM) while a job and its grandchild run: the node exits 0 within
    /// about a second, and every process of the job's group is gone. Its welcome said the
    /// host's cores.
    @Test(arguments: Ending.allCases)
    func endingTheNodeMidJobEndsItAndTheJobsGroupWithinASecond(ending: Ending) async throws {
        try await groups.withHangingJob(ignoringTerm: ending == .stdinClosedUnderAJobIgnoringSIGTERM, tasks: 1) { folder, job in
            try await withStdioNode(["--job", job]) { node in
                node.send(Self.hello)
                let welcome = try await node.line { $0.contains(#""type":"welcome""#) }
                #expect(welcome.contains(#""capacity":\#(CoreCount.online()),"#), "\(welcome)")
                node.send(Self.job("hang", id: 1, input: folder.appendingPathComponent("t0").path))
                let started = try await groups.awaitAllStarted(in: folder, tasks: 1)
                #expect(started.count == 2)

                let start = ContinuousClock.now
                if ending == .sigterm { node.child.send(SIGTERM) } else { node.closeInput() }
                let (took, exit) = try await node.exit(since: start)
                let log = node.child.stderrLines?.lines ?? []
                #expect(exit.reason == .exited(0), "\(log)")
                // 1 s is the promise (0.2 s here alone); the margin is for a loaded two-core machine,
                // where the whole suite beside it made this 1.8 s twice.
                #expect(took < .seconds(3), "took \(took)")
                #expect(await groups.survivors(of: started, within: .seconds(1)) == [])
                if ending == .sigterm, let lines = node.child.stderrLines {
                    // Awaited, not sampled: the exit can be seen before the last lines are read.
                    let stopping = try await withTimeout(.seconds(20)) { await lines.first { $0 == "[Node] Stopping (signal 15)" } }
                    #expect(stopping != nil, "\(lines.lines)")
                }
            }
        }
    }

    /// The coordinator's side SIGKILLed: the kernel closes its end of the pipe, which is the
    /// same end of input to the node. Here a `sleep` holds the write end in the coordinator's
    /// place and is killed.
    @Test func aSIGKILLedCoordinatorSideIsAClosedPipeAndEndsTheNode() async throws {
        try await groups.withHangingJob(tasks: 1) { folder, job in
            try await withStdioNode(["--job", job]) { node in
                node.send(Self.hello)
                node.send(Self.job("hang", id: 1, input: folder.appendingPathComponent("t0").path))
                var options = ChildProcess.Options(arguments: ["60"])
                options.descriptors = [3: node.input]
                options.searchPath = true
                let holder = try ChildProcess.spawn("sleep", options)
                defer { holder.send(SIGKILL) }
                // Only the holder keeps the node's input open now (the test's copy is a dup
                // it keeps closed from here on).
                let null = open("/dev/null", O_WRONLY)
                #expect(dup2(null, node.input) == node.input)
                close(null)
                _ = try await node.line { $0.contains(#""type":"welcome""#) }
                let started = try await groups.awaitAllStarted(in: folder, tasks: 1)
                #expect(started.count == 2)

                let start = ContinuousClock.now
                holder.send(SIGKILL)
                let (took, exit) = try await node.exit(since: start)
                #expect(exit.reason == .exited(0))
                #expect(took < .seconds(3), "took \(took)")
                #expect(await groups.survivors(of: started, within: .seconds(1)) == [])
            }
        }
    }

    /// `--stdio-args HEX` carries the node's arguments (hex of their UTF-8 joined by NUL);
    /// SKYNET_TOKEN is ignored (a plain hello gets a plain welcome, no handshake); stdout
    /// carries protocol lines only.
    @Test func stdioArgsCarryTheJobsAndCapacityAndATokenInTheEnvironmentIsIgnored() async throws {
        let arguments = ["--job", "say=echo said: {}", "--capacity", "3", "--failing-every", "0"]
        let hex = Secrets.hex(Array(arguments.joined(separator: "\0").utf8))
        try await withStdioNode(["--stdio-args", hex], environment: ["SKYNET_TOKEN": String(repeating: "k", count: 32)]) { node in
            node.send(Self.hello)
            let welcome = try await node.line { $0.contains(#""type":"welcome""#) }
            #expect(welcome.contains(#""capacity":3,"#), "\(welcome)")
            #expect(welcome.contains(#""say":"#), "\(welcome)")
            node.send(Self.job("say", id: 7, input: "it's me"))
            let result = try await node.line { $0.contains(#""type":"result""#) }
            #expect(result.contains(#""result":"said: it's me""#), "\(result)")

            node.closeInput()
            let (_, exit) = try await node.exit(since: .now)
            #expect(exit.reason == .exited(0))
            await node.child.stdoutLines?.closed()
            let stdout = node.child.stdoutLines?.lines ?? []
            #expect(stdout.count == 2 && stdout.allSatisfy { $0.hasPrefix(#"{"type":"#) }, "\(stdout)")
        }
    }

    /// A reader of stdout that went away (the channel broken the other way) ends the node too:
    /// its welcome meets EPIPE.
    @Test func aBrokenStdoutEndsTheNode() async throws {
        let pipe = try ChildProcess.makePipe()
        let spawned = Result { try StdioNode([], stdout: .descriptor(pipe.write)) }
        close(pipe.write)
        close(pipe.read)  // nobody reads the node's stdout any more
        let node = try spawned.get()
        defer { node.closeInput() }
        do {
            let start = ContinuousClock.now
            node.send(Self.hello)
            let (took, exit) = try await node.exit(since: start)
            #expect(exit.reason == .exited(0), "\(node.child.stderrLines?.lines ?? [])")
            #expect(took < .seconds(3), "took \(took)")
        } catch {
            await node.child.stop(grace: .zero)
            throw error
        }
    }

    @Test(arguments: [
        (["--port", "9001"], "option '--port' cannot go with --stdio"),
        (["--host", "0.0.0.0"], "option '--host' cannot go with --stdio"),
        (["--token-file", "/nonexistent"], "option '--token-file' cannot go with --stdio"),
        (["--max-connections", "2"], "option '--max-connections' cannot go with --stdio"),
        (["--exit-with-parent"], "option '--exit-with-parent' cannot go with --stdio"),
        (["--stdio-args", "zz"], "option '--stdio-args' wants hex (0-9, a-f) of UTF-8 arguments joined by NUL"),
        (["--stdio-args", "c3"], "option '--stdio-args' wants hex (0-9, a-f) of UTF-8 arguments joined by NUL"),
        (["--stdio-args", String(repeating: "41", count: 51_201)], "option '--stdio-args' is longer than 102400 hex digits"),
        (["--stdio-args", Secrets.hex(Array("--port\u{0}1".utf8))], "in --stdio-args: option '--port' is not allowed there"),
        (["--stdio-args", Secrets.hex(Array("--stdio".utf8))], "in --stdio-args: option '--stdio' is not allowed there"),
        (["--stdio-args", Secrets.hex(Array("--bogus".utf8))], "in --stdio-args: unknown option '--bogus'"),
        // Another option's value that looks like --stdio-args must not shift a refused option in.
        (["--name", "--stdio-args=x", "--job", "--port=5", "--stdio-args", ""],
         "option '--stdio-args' carries every other argument: give only --stdio beside it"),
        (["--capacity", "2", "--stdio-args", Secrets.hex(Array("--capacity\u{0}3".utf8))],
         "option '--stdio-args' carries every other argument: give only --stdio beside it"),
    ])
    func stdioRefusesOptionsOfANodeOnTheNetwork(arguments: [String], message: String) async throws {
        let run = try await runSkynet(["node", "--stdio"] + arguments, limit: .seconds(30))
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("error: \(message)"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func stdioArgsWithoutStdioIsAUsageError() async throws {
        let run = try await runSkynet(["node", "--port", "0", "--stdio-args", ""], limit: .seconds(30))
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("error: option '--stdio-args' goes with --stdio only"), "\(run.stderr)")
    }
}
