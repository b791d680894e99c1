import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork

extension ProcessTests {
    /// `skynet scan --job NAME` over real nodes: only the peers that declare the job get its
    /// tasks. Needs the scan's `--job` flag (helper G's branch).
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct PeerJobTests {
        /// Starts beta with `--job up=…` and gamma with `gammaArguments`, writes the cluster
        /// file, runs `body`, and stops both nodes on every path.
        func withNodes<T>(betaJob: String = "up=echo up {}", gammaArguments: [String], _ body: (String) async throws -> T) async throws -> T {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-jobs-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var nodes: [NodeProcess] = []
            func stopAll() async { for node in nodes { await node.stop() } }
            do {
                nodes.append(try await NodeProcess.start(executable: skynetBinary, name: "beta",
                                                         arguments: ["--job", betaJob, "--failing-every", "0"]))
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

        /// A job that takes a moment, so that both peers get tasks.
        static let nap = #"up=sh -c 'sleep 0.2; echo "$0"' {}"#

        @Test func aPeerThatRunsTheSameWordsQuotedOtherwiseIsUsedWithoutAWarning() async throws {
            let quoted = #"up='sh'  -c  'sleep 0.2; echo "$0"'  "{}""#
            try await withNodes(betaJob: Self.nap, gammaArguments: ["--job", quoted]) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", Self.nap, "--local-capacity", "0",
                                               "--total", "24", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.lines.filter { $0.hasPrefix("[Cluster] ") && !$0.hasPrefix("[Cluster] Connected: ") } == [], "\(run.lines)")
                #expect(run.completions.count == 24)
                #expect(run.completions.contains { $0.system == "gamma" })
            }
        }

        @Test func aPeerThatRunsTheJobAsAnotherCommandIsReportedOnceAndGetsNoTask() async throws {
            try await withNodes(gammaArguments: ["--job", "up=echo other {}"]) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", "up=echo up {}", "--local-capacity", "0",
                                               "--total", "20", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.lines.filter { $0.contains("gamma") } == [
                    "[Cluster] Job differs: gamma runs job 'up' as 'echo other {}', not 'echo up {}'; not used (--allow-job-mismatch uses it)",
                ], "\(run.lines)")
                #expect(run.completions.count == 20)
                #expect(run.completions.allSatisfy { $0.system == "beta" })
            }
        }

        @Test func withAllowJobMismatchAPeerThatRunsAnotherCommandIsWarnedAboutOnceAndUsed() async throws {
            let other = #"up=sh -c 'sleep 0.2; echo other "$0"' {}"#
            try await withNodes(betaJob: Self.nap, gammaArguments: ["--job", other]) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", Self.nap, "--local-capacity", "0",
                                               "--total", "24", "--allow-job-mismatch", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                let warnings = run.lines.filter { $0.hasPrefix("[Cluster] Warning: gamma runs job 'up' as ") }
                #expect(warnings.count == 1, "\(run.lines)")
                #expect(run.completions.count == 24)
                #expect(run.completions.contains { $0.system == "gamma" })
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

        /// Nodes whose own --max-output (their default, 256K) lets 5,000-byte results through:
        /// the scan's --max-output 4K still bounds what the coordinator keeps (--keep-order holds
        /// up to 256 results), with the words a local job's overflow gets.
        @Test func aPeersResultOverTheScansMaxOutputFailsItsAttempt() async throws {
            let big = "big=printf %05000d {}"
            try await withNodes(betaJob: big, gammaArguments: ["--job", big]) { file in
                let run = try await runSkynet(["scan", "--cluster", file, "--job", "big", "--local-capacity", "0", "--total", "8",
                                               "--results", "--keep-order", "--max-output", "4K", "--max-attempts", "2"],
                                              limit: .seconds(60))
                // With --results, stdout holds results only: the scan's words go to stderr.
                let gaveUp = run.stderr.split(separator: "\n").filter { $0.hasPrefix("Gave up on task ") }
                #expect(gaveUp.count == 8, "\(run.stderr)")
                #expect(gaveUp.allSatisfy { $0.hasSuffix(" after 2 attempts: output over 4096 bytes (--max-output)") }, "\(gaveUp)")
                // --keep-order prints an empty line for each task that gave up.
                #expect(run.stdout.split(separator: "\n").count == 0 && run.stdout.count == 8)
                #expect(run.status == 1)
            }
        }
    }
}
