import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests.JobProcessGroupTests {
    /// A cluster file without peers, so that a scan uses only what the test gives it.
    func emptyCluster(in folder: URL) throws -> String {
        let cluster = folder.appendingPathComponent("cluster.json")
        try #"{"nodes":[]}"#.write(to: cluster, atomically: true, encoding: .utf8)
        return cluster.path
    }

    /// A scan that sends every task of `folder`'s inputs to `node` (named beta) and runs none
    /// itself.
    func dispatchOnlyScan(to node: NodeProcess, job: String, in folder: URL) throws -> RunningProcess {
        let cluster = folder.appendingPathComponent("cluster.json")
        try #"{"nodes":[{"name":"beta","host":"127.0.0.1","port":\#(node.port)}]}"#.write(to: cluster, atomically: true, encoding: .utf8)
        return try RunningProcess([
            "scan", "--cluster", cluster.path, "--job", String(job.prefix { $0 != "=" }), "--local-capacity", "0",
            "--inputs", folder.appendingPathComponent("inputs.txt").path,
        ])
    }

    /// The pids of `started` still running within `limit`, each then killed: a test that
    /// fails leaves nothing behind either.
    func leftovers(of started: [Int32], within limit: Duration = .seconds(3)) async -> [Int32] {
        let left = await survivors(of: started, within: limit)
        for pid in left { kill(pid, SIGKILL) }
        return left
    }

    /// A node stopped by a signal gives running scans its grace, then kills every job's group
    /// and reaps it before it exits, even jobs that ignore SIGTERM (which the coordinator would
    /// otherwise run a second time elsewhere while the first ones still run). The grace is
    /// 1 s here: the jobs never end, so the default 30 s cost each signal all of it.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aNodeStoppedByASignalLeavesNoJobRunning(signal: Int32) async throws {
        try await withHangingJob(ignoringTerm: true) { folder, job in
            let node = try await NodeProcess.start(executable: skynetBinary, name: "beta", arguments: ["--job", job, "--drain-timeout", "1"])
            defer { node.send(SIGKILL) }
            let scan = try dispatchOnlyScan(to: node, job: job, in: folder)
            defer { scan.kill() }
            let started = try await awaitAllStarted(in: folder)
            #expect(started.count == 6)
            node.send(signal)
            let status = try await withTimeout(.seconds(40)) { await node.exitStatus.value }
            #expect(status == 0)
            // The node has exited: its jobs must be gone already (the bound is for /proc).
            #expect(await leftovers(of: started, within: .seconds(2)) == [])
        }
    }

    /// SIGHUP (a closed terminal, a lost SSH session) stops a scan as SIGTERM does, with exit
    /// status 129: its own jobs and its spawned nodes' jobs are all stopped.
    @Test func aHangUpStopsTheScanInOrderAndLeavesNoJobRunning() async throws {
        try await withHangingJob(ignoringTerm: true, tasks: 4) { folder, job in
            // Four slots, two here and two on the spawned node: every task runs at once.
            let scan = try RunningProcess([
                "scan", "--cluster", try emptyCluster(in: folder), "--spawn", "1", "--capacity", "2", "--local-capacity", "2",
                "--job", job, "--inputs", folder.appendingPathComponent("inputs.txt").path, "--failing-every", "0",
            ])
            defer { scan.kill() }
            let started = try await awaitAllStarted(in: folder, tasks: 4)
            #expect(started.count == 8)
            scan.send(SIGHUP)
            let finished = try await scan.finish(timeout: .seconds(40))
            #expect(finished.status == 129, "\(finished.stderr)")
            #expect(await leftovers(of: started) == [])
        }
    }

    /// A coordinator killed with SIGKILL runs no orderly stop, yet its own jobs die with it.
    @Test func aKilledScanTakesItsLocalJobsAlong() async throws {
        try await withHangingJob(ignoringTerm: true, tasks: 4) { folder, job in
            let scan = try RunningProcess([
                "scan", "--cluster", try emptyCluster(in: folder), "--local-capacity", "4",
                "--job", job, "--inputs", folder.appendingPathComponent("inputs.txt").path, "--failing-every", "0",
            ])
            defer { scan.kill() }
            let started = try await awaitAllStarted(in: folder, tasks: 4)
            #expect(started.count == 8)
            scan.send(SIGKILL)
            _ = try await scan.finish(timeout: .seconds(10))
            #expect(await leftovers(of: started, within: .seconds(3)) == [])
        }
    }

    /// The keeper also finds a job its owner spawned but died before listing (a SIGKILL in the
    /// instant after the spawn): every such group starts with `SKYNET_OWNER_PID` naming its
    /// owner. Here the owner is a shell that starts a keeper and a job in a session of its own
    /// and never lists it; once the shell is killed, the job must go too.
    @Test func theKeeperKillsAJobItsOwnerNeverListed() async throws {
        try await withScratchFolder { folder in
            let owner = folder.appendingPathComponent("owner.sh")
            try """
            exec 5> >(exec "$1" \(GroupKeeper.command) $$ 3<&0)
            SKYNET_OWNER_PID=$$ setsid sleep 60 5>&- &
            echo $! > "$2.tmp" && mv "$2.tmp" "$2"
            wait
            """.write(to: owner, atomically: true, encoding: .utf8)
            let pidFile = folder.appendingPathComponent("job.pid").path
            let shell = try ChildProcess.spawn("/bin/bash", .init(arguments: [owner.path, skynetBinary.path, pidFile]))
            defer { shell.send(SIGKILL) }
            let deadline = ContinuousClock.now + .seconds(20)
            while !FileManager.default.fileExists(atPath: pidFile), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))  // polling the folder, bounded
            }
            let text = try String(contentsOfFile: pidFile, encoding: .utf8)
            let job = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(getpgid(job) == job)  // a group of its own: no kill of the shell's group reaches it
            shell.send(SIGKILL)
            _ = try await withTimeout(.seconds(10)) { await shell.exit.value }
            #expect(await leftovers(of: [job], within: .seconds(3)) == [])
        }
    }

    /// Under `nohup` (SIGHUP ignored from the start) a hang-up is meant to change nothing: the
    /// scan runs on to the end.
    @Test func aScanStartedByNohupRunsOnThroughAHangUp() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-nohup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("slow.sh")
        try "echo $$ > \"$1.parent\"\nsleep 2\necho done\n".write(to: script, atomically: true, encoding: .utf8)
        try "\(folder.appendingPathComponent("t0").path)\n".write(to: folder.appendingPathComponent("inputs.txt"), atomically: true, encoding: .utf8)
        var options = ChildProcess.Options(arguments: [
            skynetBinary.path, "scan", "--cluster", try emptyCluster(in: folder), "--job", "slow=/bin/sh \(script.path) {}",
            "--inputs", folder.appendingPathComponent("inputs.txt").path, "--results", "--quiet",
        ])
        options.stdout = .lines()
        options.stderr = .lines()
        let scan = try ChildProcess.spawn("/usr/bin/nohup", options)
        defer { scan.send(SIGKILL) }
        // The job runs: the scan (nohup exec'd it, same pid) has installed its handlers.
        let deadline = ContinuousClock.now + .seconds(30)
        while pids(in: folder).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))  // polling the folder, bounded
        }
        #expect(pids(in: folder).count == 1)
        scan.send(SIGHUP)
        let ended = try await withTimeout(.seconds(30)) { await scan.exit.value }
        #expect(ended.status == 0, "\(scan.stderrLines?.lines ?? [])")
        #expect(scan.stdoutLines?.lines == ["done"])
    }
}
