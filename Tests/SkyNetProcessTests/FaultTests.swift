import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import Testing

extension ProcessTests {
    /// Nothing lost when a coordinator or a node dies, hangs or restarts.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct FaultTests {
        @Test func aCoordinatorKilledMidScanResumesFromItsJournalRunningEachSectorOnce() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let journal = cluster.folder.appendingPathComponent("scan.jsonl").path
                let arguments = ["--total", "40", "--duration", "0.3", "--journal", journal]
                let first = try cluster.startScan(arguments)
                defer { first.kill() }
                try await first.waitForLines(10) { $0.hasPrefix("Completed: ") }
                first.send(SIGKILL)
                let killed = try await first.finish(timeout: .seconds(10))
                #expect(killed.status == SIGKILL)
                let printed = Set(killed.completions.map(\.input))

                let (entries, _) = try ScanJournal.read(path: journal)
                let journaled = Set(entries.map(\.input))
                #expect(printed.isSubset(of: journaled))  // every sector printed as completed was journaled
                #expect(entries.count == journaled.count)

                let second = try await cluster.scan(arguments + ["--resume"])
                #expect(second.status == 0)
                #expect(second.lines.first { $0.hasPrefix("Resumed: ") } == "Resumed: \(journaled.count) sectors from \(journal)")
                let rerun = second.completions.map(\.input)
                #expect(Set(rerun).isDisjoint(with: journaled))  // none of the journaled ones ran again
                #expect((rerun + journaled).sorted() == Array(0..<40))
                #expect(second.lines.last?.hasPrefix("Finished 40 scans in ") == true)
                let (all, _) = try ScanJournal.read(path: journal)
                #expect(all.map(\.input).sorted() == Array(0..<40))
            }
        }

        @Test func aStoppedNodeGetsNoNewWorkUntilItAnswersAgain() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--failing-every", "0"]) { cluster in
                let beta = try #require(cluster.node("beta"))
                // Enough tasks that some are still unsent when beta answers again: the other
                // systems hold a dozen at a time (running, and waiting in gamma's line).
                let scan = try cluster.startScan(["--total", "120", "--duration", "0.3", "--timeout", "1", "--failing-every", "0"])
                defer {
                    scan.kill()
                    beta.send(SIGCONT)
                }
                try await scan.waitForLine { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") }
                beta.send(SIGSTOP)
                try await scan.waitForLine { $0 == "[Cluster] Unresponsive: beta" }
                // While beta is stopped the others keep going: wait for a dozen more completions.
                let before = scan.lines.filter { $0.hasPrefix("Completed: ") }.count
                try await scan.waitForLines(before + 12) { $0.hasPrefix("Completed: ") }
                beta.send(SIGCONT)
                try await scan.waitForLine { $0 == "[Cluster] Responsive: beta" }
                let run = try await scan.finish(timeout: .seconds(90))
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<120))
                let timeouts = run.reruns.filter { $0.hasSuffix("Failed with: The operation timed out.") }
                #expect(timeouts.count >= 1)
                // Only what was in flight when it stopped (its 4 slots and the 4 waiting in its
                // line): no new work was sent.
                #expect(timeouts.count <= 8)
                let lines = run.lines
                let unresponsive = try #require(lines.firstIndex(of: "[Cluster] Unresponsive: beta"))
                let responsive = try #require(lines.firstIndex(of: "[Cluster] Responsive: beta"))
                #expect(unresponsive < responsive)
                #expect(lines[responsive...].contains { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") }, "\(lines)")
            }
        }

        @Test func aNodeRestartedMidScanRejoinsAndGetsWork() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let beta = try #require(cluster.node("beta"))
                let scan = try cluster.startScan(["--total", "60", "--duration", "0.3", "--failing-every", "0"])
                defer { scan.kill() }
                try await scan.waitForLine { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") }
                beta.send(SIGKILL)
                try await scan.waitForLine { $0.hasPrefix("[Cluster] Disconnected: beta") }
                let reborn = try await NodeProcess.start(executable: skynetBinary, name: "beta",
                                                         arguments: ["--failing-every", "0"], portOverride: beta.port)
                let run: Finished
                do {
                    run = try await scan.finish(timeout: .seconds(60))
                } catch {
                    await reborn.stop()
                    throw error
                }
                await reborn.stop()
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<60))
                let lines = run.lines
                let disconnected = try #require(lines.firstIndex { $0.hasPrefix("[Cluster] Disconnected: beta") })
                let reconnected = try #require(lines[disconnected...].firstIndex(of: "[Cluster] Connected: beta"))
                #expect(lines[reconnected...].contains { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") })
            }
        }

        @Test(arguments: [
            (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":9001},{"name":"a","host":"127.0.0.1","port":9002}]}"#,
             #"node name "a" appears twice"#),
            (#"{"nodes":[{"name":"a","host":"127.0.0.1","port":0}]}"#, "nodes[0] (a) has port 0, outside 1...65535"),
            (#"{"nodes":[{"name":"a","host":"no-such-host.invalid","port":9001}]}"#, #"node a has an unknown host "no-such-host.invalid""#),
            ("nodes: []", "not valid JSON"),
            (#"{"nodes":[{"name":"local","host":"127.0.0.1","port":9001}]}"#, #"nodes[0]: the name "local" is the coordinator's own system"#),
        ])
        func aBadClusterFileExitsWithStatusTwoNamingTheFileAndTheFault(contents: String, fault: String) async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-bad-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("bad.json").path
            try contents.write(toFile: file, atomically: true, encoding: .utf8)
            let run = try await runSkynet(["scan", "--total", "1", "--cluster", file])
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: cluster file \(file): \(fault)"))
        }

        @Test func aPortInUseNamesTheAddress() async throws {
            try await withCluster(nodes: 1) { cluster in
                let beta = try #require(cluster.node("beta"))
                let run = try await runSkynet(["node", "--port", String(beta.port)])
                #expect(run.status == 2)
                #expect(run.stderr.contains("bind 127.0.0.1:\(beta.port): Address already in use"))
            }
        }
    }
}
