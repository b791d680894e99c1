import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

extension ProcessTests {
    /// Coordinators that share nodes, peers that refuse, and scans too big to build up front.
    @Suite(.serialized, .timeLimit(.minutes(4)))
    struct ContentionTests {
        /// `busy` is back-pressure: eight dispatch-only coordinators against two nodes of
        /// capacity 4 (64 requests for 8 slots) never give a task up, never print a re-run.
        @Test func eightDispatchOnlyCoordinatorsShareTwoNodesWithoutLosingOrRepeatingAnything() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--capacity", "4", "--failing-every", "0"]) { cluster in
                let watchers = cluster.nodes.map { node in Task { try await peakRunning(of: node) } }
                defer { for watcher in watchers { watcher.cancel() } }
                let arguments = ["--total", "40", "--duration", "0.05", "--local-capacity", "0", "--capacity", "4",
                                 "--failing-every", "0", "--quiet"]
                let runs = try await withThrowingTaskGroup(of: Finished.self) { group in
                    for _ in 0..<8 { group.addTask { try await cluster.scan(arguments, limit: .seconds(120)) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for watcher in watchers { watcher.cancel() }
                for run in runs {
                    #expect(run.status == 0)
                    #expect(run.completions.map(\.input).sorted() == Array(0..<40))
                    #expect(run.reruns.isEmpty)  // nothing failed: a busy bounce is no re-run
                    #expect(!run.lines.contains { $0.hasPrefix("Gave up") })
                }
                for watcher in watchers {
                    let peak = try await watcher.value
                    #expect(peak <= 4)
                    #expect(peak >= 1)
                }
            }
        }

        /// A wrong token is reported once with the fix; a scan that only dispatches and that
        /// every peer refuses ends with status 2 instead of waiting forever.
        @Test func aDispatchOnlyScanThatEveryPeerRefusesEndsWithStatusTwoAndTheFix() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-refused-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var environment = ProcessInfo.processInfo.environment
            environment["SKYNET_TOKEN"] = "the-nodes-secret"
            var nodes: [NodeProcess] = []
            do {
                for name in ["beta", "gamma"] {
                    nodes.append(try await NodeProcess.start(executable: skynetBinary, name: name, environment: environment))
                }
                let file = folder.appendingPathComponent("cluster.json").path
                try TestCluster(nodes: nodes, folder: folder).writeClusterFile()
                let run = try await runSkynet(["scan", "--cluster", file, "--total", "5", "--local-capacity", "0", "--quiet"],
                                              limit: .seconds(30), environment: ["SKYNET_TOKEN": nil])
                for node in nodes { await node.stop() }
                #expect(run.status == 2)
                for name in ["beta", "gamma"] {
                    let line = "[Cluster] Refused by \(name): unauthorized (set SKYNET_TOKEN to the nodes' token)"
                    #expect(run.lines.filter { $0 == line }.count == 1)
                }
                #expect(run.stderr.contains("error: every peer refused this coordinator (set SKYNET_TOKEN to the nodes' token)"))
                #expect(run.completions.isEmpty)
            } catch {
                for node in nodes { await node.stop() }
                throw error
            }
        }

        /// Ten million tasks are made one at a time: the first completes at once, a SIGTERM
        /// acts at once, and memory does not grow with `--total`.
        @Test func aTenMillionTaskScanStartsAtOnceStopsOnSIGTERMAndStaysSmall() async throws {
            try await withCluster(nodes: 0) { cluster in
                let arguments = ["--total", "10000000", "--duration", "0", "--local-capacity", "4", "--failing-every", "0", "--quiet"]
                let first = try cluster.startScan(arguments)
                defer { first.kill() }
                try await first.waitForLine(timeout: .seconds(5)) { $0.hasPrefix("Completed: ") }
                first.send(SIGTERM)
                let stopped = try await first.finish(timeout: .seconds(5))
                #expect(stopped.status == 143)
                #expect(stopped.lines.contains { $0.hasPrefix("Stopped: ") && $0.hasSuffix(" not run.") })

                let second = try cluster.startScan(arguments)
                defer { second.kill() }
                try await second.waitForLines(20_000, timeout: .seconds(60)) { $0.hasPrefix("Completed: ") }
                let peak = try #require(peakResidentMiB(of: second.pid))
                second.send(SIGTERM)
                let run = try await second.finish(timeout: .seconds(10))
                #expect(run.status == 143)
                #expect(peak < 150)
            }
        }

        /// One node at a time is killed and restarted on its port while 400 tasks run: every
        /// sector completes exactly once and the scan ends.
        @Test func aScanSurvivesNodesKilledAndRestartedOneAtATime() async throws {
            try await withCluster(nodes: 4, nodeArguments: ["--failing-every", "0"]) { cluster in
                let scan = try cluster.startScan(["--total", "400", "--duration", "0.05", "--local-capacity", "0",
                                                  "--failing-every", "0", "--timeout", "5", "--max-attempts", "20", "--quiet"])
                defer { scan.kill() }
                var current = cluster.nodes
                var restarted: [NodeProcess] = []
                var kills = 0
                do {
                    // Paced by progress: a kill after every 20 completions (about every 0.3 s
                    // here, most of it the restart), until the scan nears its end.
                    for round in 1..<19 {
                        try await scan.waitForLines(round * 20, timeout: .seconds(60)) { $0.hasPrefix("Completed: ") }
                        let index = round % current.count
                        let victim = current[index]
                        victim.send(SIGKILL)
                        _ = await victim.exitStatus.value
                        kills += 1
                        let reborn = try await NodeProcess.start(executable: skynetBinary, name: victim.name,
                                                                 arguments: ["--failing-every", "0"], portOverride: victim.port)
                        restarted.append(reborn)
                        current[index] = reborn
                    }
                    let run = try await scan.finish(timeout: .seconds(120))
                    for node in restarted { await node.stop() }
                    #expect(kills == 18)
                    #expect(run.status == 0)
                    #expect(run.completions.map(\.input).sorted() == Array(0..<400))
                    let seconds = try #require(run.lines.last.flatMap(finishedSeconds))
                    #expect(seconds < 90)
                } catch {
                    for node in restarted { await node.stop() }
                    throw error
                }
            }
        }
    }
}

/// The peak resident set (VmHWM) of a process, in MiB, from /proc.
func peakResidentMiB(of pid: Int32) -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
    else { return nil }
    return kilobytes / 1024
}
