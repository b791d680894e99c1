import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork

extension ProcessTests {
    /// Scans over real `skynet node` processes on loopback.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ClusterTests {
        @Test func twentyOneSecondTasksOnLocalAndTwoNodesCompleteOnceEachInAboutTwoSeconds() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--failing-every", "0"]) { cluster in
                let run = try await cluster.scan(["--total", "20", "--failing-every", "0"])
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<20))
                let bySystem = Dictionary(grouping: run.completions, by: { $0.system ?? "local" }).mapValues(\.count)
                #expect(bySystem["local"] ?? 0 >= 4)
                #expect(bySystem["beta"] ?? 0 > 0)
                #expect(bySystem["gamma"] ?? 0 > 0)
                // ceil(20 / 12) = 2 rounds of 1 s; generous for a loaded machine.
                let seconds = try #require(run.lines.last.flatMap(finishedSeconds))
                #expect(seconds < 3.5)
            }
        }

        @Test func twoCoordinatorsSharingANodeBothCompleteEverySector() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--capacity", "2", "--failing-every", "0"]) { cluster in
                let arguments = ["--total", "16", "--duration", "0.3", "--local-capacity", "1", "--capacity", "4",
                                 "--failing-every", "0", "--max-attempts", "100"]
                async let first = cluster.scan(arguments)
                async let second = cluster.scan(arguments)
                for run in try await [first, second] {
                    #expect(run.status == 0)
                    #expect(run.completions.map(\.input).sorted() == Array(0..<16))
                }
            }
        }

        /// The node's own guard keeps it at its capacity whatever clients do; what a coordinator
        /// must do is believe the welcome: a cluster file that allows 4 against a node that
        /// welcomes with 2 sends at most 2 at a time, so the node never answers `busy`.
        @Test func aCoordinatorSendsNoMoreThanTheCapacityTheNodeWelcomesWith() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-welcome-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let log = folder.appendingPathComponent("node.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let node = try await NodeProcess.start(executable: skynetBinary, name: "beta",
                                                   arguments: ["--capacity", "2", "--failing-every", "0", "--verbose"],
                                                   stderr: try FileHandle(forWritingTo: log))
            let run: Finished
            do {
                let file = folder.appendingPathComponent("cluster.json").path
                let cluster = #"{"capacity":4,"nodes":[{"name":"beta","host":"\#(node.host)","port":\#(node.port),"capacity":4}]}"#
                try cluster.write(toFile: file, atomically: true, encoding: .utf8)
                run = try await runSkynet(["scan", "--cluster", file, "--total", "24", "--duration", "0.1", "--local-capacity", "0",
                                           "--capacity", "4", "--json", "--quiet"], limit: .seconds(60))
                await node.stop()
            } catch {
                await node.stop()
                throw error
            }
            #expect(run.status == 0)
            let summary = try #require(run.lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
            #expect(summary["completed"] as? Int == 24)
            #expect(summary["busy"] as? Int == 0)
            #expect(!run.lines.contains { $0.contains("busy") && $0.contains(#""event":"retry""#) })
            let nodeLog = try String(contentsOf: log, encoding: .utf8)
            #expect(nodeLog.components(separatedBy: ": completed in ").count - 1 == 24)  // the node did log every task
            #expect(!nodeLog.contains("busy"))
        }

        /// `busy` means another coordinator fills the node: it costs the task no attempt.
        @Test func busyAnswersDoNotUseUpAttemptsOfCoordinatorsThatOnlyDispatch() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--capacity", "2", "--failing-every", "0"]) { cluster in
                let arguments = ["--total", "8", "--duration", "0.2", "--local-capacity", "0", "--max-attempts", "1"]
                async let first = cluster.scan(arguments)
                async let second = cluster.scan(arguments)
                for run in try await [first, second] {
                    #expect(run.status == 0)
                    #expect(run.completions.map(\.input).sorted() == Array(0..<8))
                    #expect(!run.lines.contains { $0.hasPrefix("Gave up") })
                }
            }
        }

        @Test func aNodeStopsCleanlyOnSIGTERMRightAfterSayingItListens() async throws {
            for _ in 0..<5 {
                let node = try await NodeProcess.start(executable: skynetBinary, name: "brief")
                node.send(SIGTERM)
                let status = try await withTimeout(.seconds(10)) { await node.exitStatus.value }
                #expect(status == 0)
            }
        }

        @Test func aRemoteFailureIsReRunLocallyWithoutWaitingForTheTimeout() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "1"]) { cluster in
                let run = try await cluster.scan(["--total", "12", "--duration", "0.2", "--timeout", "30", "--failing-every", "0"])
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<12))
                #expect(run.completions.allSatisfy { $0.system == nil })
                #expect(!run.reruns.isEmpty)
                #expect(run.reruns.allSatisfy { $0.hasSuffix("Failed with: UnreliableAPI.action(failingEvery:) failed.") })
                let seconds = try #require(run.lines.last.flatMap(finishedSeconds))
                #expect(seconds < 10)  // far below the 30 s timeout
            }
        }

        @Test func aNodeKilledMidScanFailsItsTasksAtOnceAndTheyAreReRun() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--failing-every", "0"]) { cluster in
                let scan = try cluster.startScan(["--total", "40", "--duration", "0.5", "--timeout", "30", "--failing-every", "0"])
                defer { scan.kill() }
                try await scan.waitForLine { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") }
                try #require(cluster.node("beta")).send(SIGKILL)
                let run = try await scan.finish(timeout: .seconds(60))
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<40))
                #expect(run.lines.contains { $0.hasPrefix("[Cluster] Disconnected: beta") })
                #expect(run.reruns.contains { $0.contains("beta disconnected") })
                let seconds = try #require(run.lines.last.flatMap(finishedSeconds))
                #expect(seconds < 20)  // the killed node's tasks did not wait out the 30 s timeout
            }
        }

        @Test func aStoppedNodesRequestsTimeOutAndAreReRun() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--failing-every", "0"]) { cluster in
                let beta = try #require(cluster.node("beta"))
                let scan = try cluster.startScan(["--total", "30", "--duration", "0.3", "--timeout", "1", "--failing-every", "0"])
                defer {
                    scan.kill()
                    beta.send(SIGCONT)
                }
                try await scan.waitForLine { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by beta") }
                beta.send(SIGSTOP)
                let run = try await scan.finish(timeout: .seconds(90))
                beta.send(SIGCONT)
                #expect(run.status == 0)
                #expect(run.completions.map(\.input).sorted() == Array(0..<30))
                #expect(run.reruns.contains { $0.hasSuffix("Failed with: The operation timed out.") })
            }
        }

        @Test func aNodeStartedAfterTheScanBeganJoinsAndGetsWork() async throws {
            try await withCluster(nodes: 0) { cluster in
                let port = try freePort()
                try cluster.writeClusterFile(extra: [.init(name: "late", host: "127.0.0.1", port: port)])
                let scan = try cluster.startScan(["--total", "40", "--duration", "0.5", "--failing-every", "0"])
                defer { scan.kill() }
                try await scan.waitForLine { $0.hasPrefix("[Cluster] Unreachable: late") }
                try await scan.waitForLine { $0.hasPrefix("Completed: ") }
                let late = try await NodeProcess.start(executable: skynetBinary, name: "late",
                                                       arguments: ["--failing-every", "0"], portOverride: port)
                let run: Finished
                do {
                    run = try await scan.finish(timeout: .seconds(60))
                } catch {
                    await late.stop()
                    throw error
                }
                await late.stop()
                #expect(run.status == 0)
                #expect(run.lines.contains("[Cluster] Connected: late"))
                #expect(run.completions.contains { $0.system == "late" })
                #expect(run.completions.map(\.input).sorted() == Array(0..<40))
            }
        }

        @Test func theReadmeScanWithSpawnedNodesWorks() async throws {
            let run = try await runSkynet(["scan", "--total", "20", "--spawn", "2"], limit: .seconds(60))
            #expect(run.status == 0)
            #expect(run.completions.map(\.input).sorted() == Array(0..<20))
            #expect(run.lines.contains("[Cluster] Connected: node1"))
            #expect(run.lines.contains("[Cluster] Connected: node2"))
            #expect(run.completions.contains { $0.system == "node1" })
        }
    }
}

/// The seconds of a `Finished 20 scans in 2.04 seconds.` line.
func finishedSeconds(_ line: String) -> Double? {
    guard line.hasPrefix("Finished "), let range = line.range(of: " in ") else { return nil }
    return Double(line[range.upperBound...].dropLast(" seconds.".count))
}

/// The highest `running` a node reports to pings, sampled until cancelled.
func peakRunning(of node: NodeProcess) async throws -> Int {
    let peer = try await PeerConnection.open(name: node.name, host: node.host, port: node.port, token: nil, timeout: .seconds(5))
    defer { peer.close() }
    var peak = 0
    while !Task.isCancelled {
        let id = peer.nextID()
        guard case .pong(_, let pong)? = try? await peer.request(id: id, .ping(id: id)) else { break }
        peak = max(peak, pong.running)
        try? await Task.sleep(for: .milliseconds(10))
    }
    return peak
}
