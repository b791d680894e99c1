import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork

extension ProcessTests {
    /// `skynet node --job NAME=COMMAND`: what it accepts, what it refuses, and protected mode.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct NodeJobCommandLineTests {
        @Test(arguments: [
            (["--job", "sum"], "option '--job' wants NAME=COMMAND, as in --job sum='sha256sum {}', not 'sum'"),
            (["--job", "a b=ls"], "option '--job a b=ls': 'a b' cannot name a job"),
            (["--job", "=ls"], "option '--job =ls': '' cannot name a job"),
            (["--job", "scan=ls"], "'scan' is the built-in simulated scan and cannot be redeclared"),
            (["--job", "sum=sha256sum {} | head"], "'|' means something only to a shell"),
            (["--job", "sum="], "option '--job sum=': the command is empty"),
            (["--job", "sum=ls", "--job", "sum=cat"], "option '--job sum=cat': the job 'sum' is declared twice"),
            (["--max-output", "0"], "option '--max-output' wants a number of bytes in 1...524288"),
            (["--max-output", "1G"], "option '--max-output' wants a number of bytes"),
            (["--max-output", "1K", "--max-output", "2K"], "option '--max-output' is given twice"),
        ])
        func aBadJobDeclarationIsAUsageError(arguments: [String], message: String) async throws {
            let run = try await runSkynet(["node", "--port", "0"] + arguments, limit: .seconds(20))
            #expect(run.status == 2)
            #expect(run.stderr.hasPrefix("error: "))
            #expect(run.stderr.contains(message), "stderr: \(run.stderr)")
            #expect(run.stderr.contains("usage: skynet node"))
            #expect(!run.stdout.contains("listening on"))
        }

        @Test func aNodeWithCommandJobsOnANonLoopbackAddressWithoutATokenRefusesToStart() async throws {
            // It must refuse before binding: it never says `listening on`, and it ends at once.
            let run = try await runSkynet(["node", "--port", "0", "--host", "0.0.0.0", "--job", "sum=sha256sum {}"],
                                          limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
            #expect(run.status == 2)
            #expect(run.stderr.contains("refusing to start: this node declares command jobs and would listen on 0.0.0.0 without SKYNET_TOKEN"))
            #expect(run.stderr.contains("Set SKYNET_TOKEN"), "the fix is named")
            #expect(run.stderr.contains("--host 127.0.0.1"), "the other fix is named")
            #expect(!run.stdout.contains("listening on"))
        }

        @Test func aNodeWithCommandJobsOnLoopbackStartsWithoutAToken() async throws {
            let node = try await NodeProcess.start(
                executable: skynetBinary, name: "beta",
                arguments: ["--job", "sum=sha256sum {}", "--job", "thumb=convert {} 'out/{#}.png'", "--max-output", "64K"],
                environment: ProcessInfo.processInfo.environment.filter { $0.key != "SKYNET_TOKEN" })
            do {
                try await expectDeclaredJobs(node)
            } catch {
                await node.stop(grace: .seconds(3))
                throw error
            }
            await node.stop(grace: .seconds(3))
        }

        func expectDeclaredJobs(_ node: NodeProcess) async throws {
            let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: nil, timeout: .seconds(5))
            defer { peer.close() }
            #expect(peer.welcome.jobs == [
                "scan": "built-in simulated scan", "sum": "sha256sum {}", "thumb": "convert {} 'out/{#}.png'",
            ])
            // A job the node did not declare is refused by name, whatever the client asks.
            let id = peer.nextID()
            let reply = try await peer.request(id: id, .run(id: id, task: ScanTask(input: 0, duration: 0, job: "rm", text: "-rf /")))
            guard case .failure(_, _, let code, let message) = reply else { Issue.record("expected a failure, got \(reply)"); return }
            #expect(code == "unknown-job")
            #expect(message == "beta has no job 'rm'")
        }

        @Test func theHelpDocumentsJobsWithExamples() async throws {
            let run = try await runSkynet(["node", "--help"], limit: .seconds(20))
            #expect(run.status == 0)
            for text in ["--job NAME=COMMAND", "--max-output BYTES", "{#}", "never run by one", "SKYNET_INPUT",
                         "Protected mode", "skynet node --port 9001 --job sum='sha256sum {}'"] {
                #expect(run.stdout.contains(text), "help lacks \(text)")
            }
        }
    }
}
