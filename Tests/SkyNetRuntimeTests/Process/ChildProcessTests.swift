import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// The one child-process type: exit values, lines, ready lines, stopping, groups, and no
/// zombie or descriptor left behind.
@Suite struct ChildProcessTests {
    private func spawn(_ path: String, _ arguments: [String], lines: Bool = false, group: Bool = false) throws -> ChildProcess {
        var options = ChildProcess.Options(arguments: arguments)
        if lines { options.stdout = .lines() }
        options.ownProcessGroup = group
        return try ChildProcess.spawn(path, options)
    }

    private func exit(of child: ChildProcess, within limit: Duration = .seconds(20)) async throws -> ChildExit {
        try await withTimeout(limit) { await child.exit.value }
    }

    @Test func theExitStatusIsAValue() async throws {
        let child = try spawn("/bin/sh", ["-c", "exit 3"])
        let ended = try await exit(of: child)
        #expect(ended.reason == .exited(3))
        #expect(ended.description == "exit status 3")
        #expect(try await exit(of: spawn("/bin/true", [])).succeeded)
    }

    @Test func deathBySignalNamesTheSignal() async throws {
        let child = try spawn("/bin/sleep", ["30"])
        child.send(SIGKILL)
        let ended = try await exit(of: child)
        #expect(ended.reason == .signalled(SIGKILL))
        #expect(ended.status == SIGKILL)
        #expect(ended.description == "killed by signal 9 (SIGKILL)")
    }

    @Test func aProgramThatDoesNotExistIsAClearError() throws {
        #expect(throws: ChildProcessError.self) { try spawn("/nonexistent/program", []) }
        do {
            _ = try spawn("/nonexistent/program", [])
        } catch let error as ChildProcessError {
            #expect(error.description.contains("cannot run '/nonexistent/program'"))
            #expect(error.code == ENOENT)
        }
    }

    @Test func argumentsArriveAsTheyAreWithoutAShell() async throws {
        let tricky = ["a b", "$(echo no)", "; rm -rf /", "*", "-n", "ünïcödé", "\"quoted\""]
        let child = try spawn("/usr/bin/printf", ["%s\\n"] + tricky, lines: true)
        _ = try await exit(of: child)
        await child.stdoutLines?.closed()
        #expect(child.stdoutLines?.lines == tricky)
    }

    @Test func stdoutLinesAreReadInOrderAndLongLinesAreCut() async throws {
        var options = ChildProcess.Options(arguments: ["-c", "seq 1 5000; head -c 100000 /dev/zero | tr '\\\\0' x; echo; echo end"])
        options.stdout = .lines(maxLength: 1000, keep: 10_000)
        let child = try ChildProcess.spawn("/bin/sh", options)
        _ = try await exit(of: child)
        await child.stdoutLines?.closed()
        let lines = child.stdoutLines?.lines ?? []
        #expect(lines.count == 5002)
        #expect(Array(lines.prefix(5000)) == (1...5000).map(String.init))
        #expect(lines[5000].count == 1000)
        #expect(lines.last == "end")
    }

    @Test func aReadyLineThatNeverComesTimesOut() async throws {
        let child = try spawn("/bin/sh", ["-c", "echo starting; sleep 300"], lines: true)
        let clock = ContinuousClock(), start = clock.now
        await #expect(throws: TimeoutError.self) {
            try await child.waitForLine(timeout: .milliseconds(300)) { $0.hasPrefix("listening") }
        }
        // Far sooner than the child's 300 s (a sanitizer build on a busy machine took 9.6 s,
        // and 29 s at a load average of 25).
        #expect(clock.now - start < .seconds(60))
        #expect(try await child.waitForLine(timeout: .seconds(10)) { $0 == "starting" } == "starting")
        await child.stop(grace: .seconds(1))
    }

    @Test func aReadyLineAfterTheChildEndedIsAnError() async throws {
        let child = try spawn("/bin/sh", ["-c", "echo bye"], lines: true)
        await #expect(throws: ChildProcessError.self) {
            try await child.waitForLine(timeout: .seconds(10)) { $0.hasPrefix("listening") }
        }
    }

    @Test func stopEscalatesToSIGKILLForAChildThatIgnoresSIGTERM() async throws {
        let child = try spawn("/bin/sh", ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"], lines: true)
        try await child.waitForLine(timeout: .seconds(10)) { $0 == "ready" }
        let clock = ContinuousClock(), start = clock.now
        let ended = await child.stop(grace: .milliseconds(500))
        #expect(ended.reason == .signalled(SIGKILL))
        #expect(clock.now - start >= .milliseconds(400))
        #expect(clock.now - start < .seconds(30))  // the child never ends by itself; 21 s seen at a load average of 25
    }

    @Test func stopEndsAPoliteChildWithSIGTERM() async throws {
        let child = try spawn("/bin/sleep", ["30"])
        let ended = await child.stop(grace: .seconds(10))
        #expect(ended.reason == .signalled(SIGTERM))
    }

    @Test func aGroupStopReachesTheGrandchild() async throws {
        let child = try spawn("/bin/sh", ["-c", "sleep 30 & echo $!; wait"], lines: true, group: true)
        let line = try await child.waitForLine(timeout: .seconds(10)) { Int($0) != nil }
        let grandchild = try #require(Int32(line))
        #expect(kill(grandchild, 0) == 0)
        await child.stop(grace: .seconds(2))
        // The grandchild is not ours to reap: it is gone once it is no process or a zombie.
        let deadline = ContinuousClock.now + .seconds(5)
        while isAlive(grandchild), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!isAlive(grandchild))
    }

    @Test func aThousandShortChildrenLeaveNoZombieAndNoDescriptor() async throws {
        let before = openDescriptors()
        var pids: [Int32] = []
        var said = 0
        for _ in 0..<125 {
            let batch = try (0..<8).map { _ in try spawn("/bin/sh", ["-c", "echo hi"], lines: true) }
            for child in batch {
                #expect(try await exit(of: child).succeeded)
                await child.stdoutLines?.closed()
                if child.stdoutLines?.lines == ["hi"] { said += 1 }
                pids.append(child.pid)
            }
        }
        // Each child ran and was heard to its end (its line read, its pipe closed).
        #expect(said == 1000)
        #expect(pids.filter(isZombieChild).isEmpty)
        // Other suites open pipes and files meanwhile (their sockets are not counted): allow for
        // them, still far below the thousand a descriptor leaked per child would hold.
        #expect(openDescriptors() <= before + 200)
    }

    @Test func aBytesOutputIsCapturedWholeAndItsOverflowKillsTheGroup() async throws {
        var options = ChildProcess.Options(arguments: ["-c", "printf 'out'; printf 'err' >&2"])
        options.stdout = .bytes(limit: 10)
        options.stderr = .tail(bytes: 10)
        let small = try ChildProcess.spawn("/bin/sh", options)
        #expect(try await exit(of: small).succeeded)
        let captured = await small.capturedOutput
        #expect(captured == CapturedOutput(stdout: CapturedBytes(bytes: Array("out".utf8)), stderr: CapturedBytes(bytes: Array("err".utf8))))

        options = ChildProcess.Options(arguments: ["-c", "sleep 60 & yes"])
        options.stdout = .bytes(limit: 1000)
        options.ownProcessGroup = true
        let endless = try ChildProcess.spawn("/bin/sh", options)
        #expect(try await exit(of: endless).reason == .signalled(SIGKILL))
        let cut = await endless.capturedOutput
        #expect(cut?.stdout?.overflowed == true)
        #expect(cut?.stdout?.bytes.count == 1000)
    }

    /// Forty running children with captured outputs are read on the event loops: no thread
    /// each; each one's output arrives whole once it ends.
    @Test func fortyChildrenWithCapturedOutputsHoldNoThreadEach() async throws {
        let directory = try TemporaryDirectory()
        let gate = directory.path + "/go"
        var children: [ChildProcess] = []
        defer { for child in children { child.send(SIGKILL) } }
        for index in 0..<40 {
            let script = "echo out \(index); echo err >&2; while [ ! -e '\(gate)' ]; do sleep 0.05; done; echo done"
            var options = ChildProcess.Options(arguments: ["-c", script])
            options.stdout = .bytes(limit: 1000)
            options.stderr = .tail(bytes: 100)
            children.append(try ChildProcess.spawn("/bin/sh", options))
        }
        // A thread each made 40 of them; other suites beside this one may hold a few.
        let captureThreads = threadNames().filter { $0.hasPrefix("skynet-child-o") }.count  // names are cut at 15 bytes
        #expect(captureThreads < 10, "\(captureThreads) capture threads for 40 children")
        _ = try directory.write([], named: "go")
        var whole = 0
        for (index, child) in children.enumerated() {
            #expect(try await exit(of: child).succeeded)
            let captured = await child.capturedOutput
            if captured?.stdout?.bytes == Array("out \(index)\ndone\n".utf8), captured?.stderr?.bytes == Array("err\n".utf8) { whole += 1 }
        }
        #expect(whole == 40)
    }

    @Test func aTailOutputKeepsOnlyTheLastBytes() async throws {
        var options = ChildProcess.Options(arguments: ["-c", "seq 1 100000 >&2"])
        options.stderr = .tail(bytes: 12)
        let child = try ChildProcess.spawn("/bin/sh", options)
        #expect(try await exit(of: child).succeeded)
        let tail = await child.capturedOutput?.stderr
        #expect(tail?.overflowed == true)
        #expect(tail.map { String(decoding: $0.bytes, as: UTF8.self) } == "9999\n100000\n")
    }

    @Test func anExtraDescriptorReachesTheChildUnderItsOwnNumber() async throws {
        let (first, firstWriter) = try Spawner.makePipe()
        let (second, secondWriter) = try Spawner.makePipe()
        defer { close(first); close(second) }
        for (writer, text) in [(firstWriter, "through three\n"), (secondWriter, "through five\n")] {
            _ = Array(text.utf8).withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
            close(writer)
        }
        // 4 lies between the two targets: it is closed in the child, not inherited.
        var options = ChildProcess.Options(arguments: ["-c", "cat <&3; cat <&5; [ -e /proc/self/fd/4 ] && echo four; exit 0"])
        options.descriptors = [3: first, 5: second]
        options.stdout = .lines()
        let child = try ChildProcess.spawn("/bin/sh", options)
        #expect(try await exit(of: child).succeeded)
        await child.stdoutLines?.closed()
        #expect(child.stdoutLines?.lines == ["through three", "through five"])
        // Targets below 3 belong to stdin/stdout/stderr.
        options.descriptors = [2: first]
        #expect(throws: ChildProcessError.self) { try ChildProcess.spawn("/bin/sh", options) }
    }

    @Test func socketsAreCloseOnExecSoNoChildInheritsThem() async throws {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        let port = try listener.localAddress().port
        let client = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
        defer { client.close() }
        // The connection is already queued: accept returns at once (still on a thread of its own).
        let accepted = try await onOwnThread(named: "test-accept") { try listener.accept().socket }
        defer { accepted.close() }
        for socket in [listener, client, accepted] {
            #expect(fcntl(socket.descriptor, F_GETFD) & FD_CLOEXEC != 0)
        }
    }

    private func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        return !(stat.split(separator: ")").last?.hasPrefix(" Z") ?? false)
    }

    private func isZombieChild(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let fields = stat.split(separator: ")").last?.split(separator: " ") else { return false }
        return fields.count > 2 && fields[0] == "Z" && Int32(fields[1]) == getpid()
    }

    /// This process's open descriptors but sockets: children are given pipes and files, and
    /// other suites open and close hundreds of sockets meanwhile.
    private func openDescriptors() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.count { entry in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)
            return target?.hasPrefix("socket:") != true
        }
    }
}
