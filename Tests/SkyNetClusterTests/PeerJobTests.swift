import Foundation
import Testing
@testable import SkyNet

extension ProcessTests {
    /// `skynet scan --job NAME` over real nodes: only the peers that declare the job get its
    /// tasks. Needs the scan's `--job` flag (helper G's branch).
    @Suite(.serialized, .timeLimit(.minutes(2)), .disabled("needs wt-g: skynet scan --job"))
    struct PeerJobTests {
        /// Starts beta with `--job up=…` and gamma with `gammaArguments`, writes the cluster
        /// file, runs `body`, and stops both nodes on every path.
        func withNodes<T>(gammaArguments: [String], _ body: (String) async throws -> T) async throws -> T {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-jobs-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var nodes: [NodeProcess] = []
            func stopAll() async { for node in nodes { await node.stop() } }
            do {
                nodes.append(try await NodeProcess.start(executable: skynetBinary, name: "beta",
                                                         arguments: ["--job", "up=echo up {}", "--failing-every", "0"]))
                nodes.append(try await NodeProcess.start(executable: skynetBinary, name: "gamma",
                                                         arguments: gammaArguments + ["--failing-every", "0"]))
                let cluster = TestCluster(nodes: nodes, folder: folder)
                try cluster.writeClusterFile()
                let result = try await body(cluster.clusterFile)
                await stopAll()
                return result
            } catch {
                await stopAll()
                throw error
            }
        }

        @Test func aPeerWithoutTheJobIsReportedOnceAndGetsNoneOfItsTasks() async throws {
            try await withNodes(gammaArguments: []) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", "up", "--total", "10", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.lines.filter { $0 == "[Cluster] Lacks job: gamma has no job 'up' (its jobs: scan)" }.count == 1)
                #expect(run.completions.count == 10)
                #expect(run.completions.allSatisfy { $0.system == "beta" })
            }
        }

        @Test func aPeerThatRunsTheJobAsAnotherCommandIsWarnedAboutOnceAndUsed() async throws {
            try await withNodes(gammaArguments: ["--job", "up=echo other {}"]) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", "up", "--total", "20", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                let warnings = run.lines.filter { $0.hasPrefix("[Cluster] Warning: ") && $0.contains("runs job 'up' as") }
                #expect(warnings.count == 1, "\(run.lines)")
                #expect(run.completions.count == 20)
            }
        }

        @Test func aDispatchOnlyScanWhoseEveryPeerLacksTheJobEndsWithStatusTwo() async throws {
            try await withNodes(gammaArguments: []) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", "absent", "--total", "5", "--quiet"],
                                              limit: .seconds(60))
                #expect(run.status == 2)
                #expect(run.stderr.contains("error: no peer has the job 'absent' (declare it on the nodes: skynet node --job 'absent=COMMAND')"))
                #expect(run.completions.isEmpty)
            }
        }
    }
}
