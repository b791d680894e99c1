import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// A command job is stopped whole, its grandchildren too, at its deadline and when the
    /// scan is stopped; and a job longer than `--timeout` runs once.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct JobProcessGroupTests {
        /// A folder with `hang.sh`: it starts a grandchild that sleeps, writes both pids next to
        /// the path it was given, and waits. The script is the test's; the product runs it
        /// without a shell (the program is /bin/sh, the script and the input its arguments).
        func withHangingJob<T>(ignoringTerm: Bool = false, tasks: Int = 3, _ body: (_ folder: URL, _ job: String) async throws -> T) async throws -> T {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-hang-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = folder.appendingPathComponent("hang.sh")
            try ((ignoringTerm ? "trap '' TERM\n" : "") + """
                sleep 60 &
                echo $! > "$1.child"
                echo $$ > "$1.parent"
                wait
                """).write(to: script, atomically: true, encoding: .utf8)
            let inputs = (0..<tasks).map { folder.appendingPathComponent("t\($0)").path }
            try (inputs.joined(separator: "\n") + "\n").write(to: folder.appendingPathComponent("inputs.txt"), atomically: true, encoding: .utf8)
            return try await body(folder, "hang=/bin/sh \(script.path) {}")
        }

        /// The pids the job's scripts wrote: each script and its sleeping grandchild.
        func pids(in folder: URL) -> [Int32] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.filter { $0.hasSuffix(".child") || $0.hasSuffix(".parent") }.compactMap { name in
                (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
        }

        /// Whether `pid` still runs (a zombie waiting to be reaped by init does not count).
        func isRunning(_ pid: Int32) -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
            return state != "Z" && state != "X"
        }

        /// Waits (bounded) until none of `pids` runs; the ones still running after it.
        func survivors(of pids: [Int32], within limit: Duration = .seconds(3)) async -> [Int32] {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline, pids.contains(where: isRunning) {
                try? await Task.sleep(for: .milliseconds(20))  // polling the process table, bounded
            }
            return pids.filter(isRunning)
        }

        @Test func aJobIsKilledWholeAtItsDeadlineGrandchildrenToo() async throws {
            try await withHangingJob { folder, job in
                let run = try await runSkynet([
                    "scan", "--spawn", "1", "--local-capacity", "0", "--job", job,
                    "--inputs", folder.appendingPathComponent("inputs.txt").path,
                    "--task-timeout", "1", "--max-attempts", "1", "--failing-every", "0",
                ], limit: .seconds(60))
                #expect(run.status == 1, "\(run.stderr)")
                let gaveUp = run.lines.filter { $0.hasPrefix("Gave up on task ") }
                #expect(gaveUp.count == 3, "\(run.stdout)")
                #expect(gaveUp.allSatisfy { $0.hasSuffix("stopped at its deadline of 1 s") }, "\(gaveUp)")
                let started = pids(in: folder)
                #expect(started.count == 6)
                #expect(await survivors(of: started) == [])
            }
        }

        @Test func stoppingTheScanKillsEveryJobsWholeGroup() async throws {
            try await withHangingJob { folder, job in
                let scan = try RunningProcess([
                    "scan", "--spawn", "1", "--local-capacity", "0", "--job", job,
                    "--inputs", folder.appendingPathComponent("inputs.txt").path, "--failing-every", "0",
                ])
                defer { scan.kill() }
                // Every task has started its grandchild (both pids are written) before the stop.
                let deadline = ContinuousClock.now + .seconds(30)
                while pids(in: folder).count < 6, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))  // polling the folder, bounded
                }
                let started = pids(in: folder)
                #expect(started.count == 6)
                scan.send(SIGINT)
                let finished = try await scan.finish(timeout: .seconds(30))
                #expect(finished.status == 130, "\(finished.stderr)")
                #expect(await survivors(of: started) == [])
            }
        }

        /// Waits (bounded) until the scripts of all `tasks` tasks have written their pids.
        func awaitAllStarted(in folder: URL, tasks: Int = 3) async throws -> [Int32] {
            let deadline = ContinuousClock.now + .seconds(30)
            while pids(in: folder).count < 2 * tasks, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))  // polling the folder, bounded
            }
            return pids(in: folder)
        }

        /// A second Ctrl-C exits at once, before jobs that ignore SIGTERM have been killed in
        /// order: they are killed with the process, never left behind.
        @Test func aSecondCtrlCTakesTheCoordinatorsJobsAlong() async throws {
            try await withHangingJob(ignoringTerm: true) { folder, job in
                let cluster = folder.appendingPathComponent("cluster.json")
                try #"{"nodes":[]}"#.write(to: cluster, atomically: true, encoding: .utf8)
                let scan = try RunningProcess([
                    "scan", "--cluster", cluster.path, "--job", job,
                    "--inputs", folder.appendingPathComponent("inputs.txt").path, "--failing-every", "0",
                ])
                defer { scan.kill() }
                let started = try await awaitAllStarted(in: folder)
                #expect(started.count == 6)
                scan.send(SIGINT)
                try await scan.waitForErrorLine { $0.contains("Ctrl-C again to quit at once") }
                scan.send(SIGINT)
                let finished = try await scan.finish(timeout: .seconds(30))
                #expect(finished.status == 130)
                #expect(await survivors(of: started) == [])
            }
        }

        /// The same on a node: its second signal takes its running jobs along.
        @Test func aSecondSignalTakesTheNodesJobsAlong() async throws {
            try await withHangingJob(ignoringTerm: true) { folder, job in
                let log = folder.appendingPathComponent("node.log")
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
                let node = try await NodeProcess.start(executable: skynetBinary, name: "beta", arguments: ["--job", job],
                                                       stderr: try FileHandle(forWritingTo: log))
                defer { node.send(SIGKILL) }
                let scan = try dispatchOnlyScan(to: node, job: job, in: folder)
                defer { scan.kill() }
                let started = try await awaitAllStarted(in: folder)
                #expect(started.count == 6)
                node.send(SIGTERM)
                let deadline = ContinuousClock.now + .seconds(10)
                while !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("[Node] Stopping"), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))  // polling the node's log, bounded
                }
                node.send(SIGTERM)
                _ = try await withTimeout(.seconds(10)) { await node.exitStatus.value }
                #expect(await survivors(of: started) == [])
            }
        }

        /// The default --timeout is 5 s: a twelve-second job outlives it twice and still runs
        /// once, because liveness is decided by pings, not by the request's age.
        @Test func aTwelveSecondJobUnderTheDefaultTimeoutRunsOnce() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--job", "slow=sleep 12"]) { cluster in
                let run = try await cluster.scan(["--job", "slow", "--total", "1", "--local-capacity", "0", "--json"],
                                                 limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                let events = run.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                let completed = events.filter { $0["event"] as? String == "completed" }
                #expect(completed.count == 1)
                #expect(completed.first?["attempt"] as? Int == 1)
                #expect((completed.first?["seconds"] as? Double ?? 0) >= 12)
                #expect(!events.contains { $0["event"] as? String == "retry" }, "\(run.stdout)")
            }
        }
    }
}
