import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster

extension ProcessTests {
    /// Text from outside (a job's stderr, a peer's job summary) reaches the terminal with its
    /// control characters escaped, and `--json` with them as they were.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ControlCharacterTests {
        static let job = #"bad=sh -c 'printf "x\033[2J\033]0;title\007" >&2; exit 3'"#
        static let raw = "exit status 3: x\u{1B}[2J\u{1B}]0;title\u{07}"

        @Test func aFailureMessageIsEscapedInTextAndKeptInJSON() async throws {
            try await withScratchFolder { folder in
                let inputs = try writeLines(["a"], to: folder, named: "in.txt")
                let arguments = ["scan", "--job", Self.job, "--inputs", inputs, "--max-attempts", "2", "--quiet"]
                let text = try await runSkynet(arguments)
                #expect(text.status == 1)
                let escaped = #"exit status 3: x\x1b[2J\x1b]0;title\x07"#
                #expect(text.lines.contains("Re-run task: 0. Failed with: \(escaped)"), "\(text.stdout)")
                #expect(text.lines.contains("Gave up on task 0 after 2 attempts: \(escaped)"), "\(text.stdout)")
                #expect(!text.stdout.contains("\u{1B}") && !text.stdout.contains("\u{07}"))
                #expect(!text.stderr.contains("\u{1B}") && !text.stderr.contains("\u{07}"))

                let json = try await runSkynet(arguments + ["--json"])
                let events = json.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let failed = try #require(events.first { $0["event"] as? String == "failed" })
                #expect(failed["error"] as? String == Self.raw)
                let retry = try #require(events.first { $0["event"] as? String == "retry" })
                #expect(retry["error"] as? String == Self.raw)
            }
        }

        /// Arguments come from outside too: an error that quotes one (a path, a job name, an
        /// unknown command) shows its control characters escaped.
        @Test func errorsThatQuoteAnArgumentEscapeItsControlCharacters() async throws {
            for arguments in [["scan", "--inputs", "no\u{1B}[2Jfile", "--total", "1"], ["scan", "--job", "e\u{1B}x"], ["bad\u{1B}x"]] {
                let run = try await runSkynet(arguments)
                #expect(run.status == 2)
                #expect(!run.stderr.contains("\u{1B}"), "\(arguments)")
                #expect(run.stderr.contains("\\x1b"), "\(run.stderr)")
            }
        }

        @Test func aPeersJobSummaryIsEscapedOnTheTerminal() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-escape-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var nodes: [NodeProcess] = []
            func stopAll() async { for node in nodes { await node.stop() } }
            do {
                nodes.append(try await NodeProcess.start(executable: skynetBinary, name: "beta",
                                                         arguments: ["--job", "up=echo up {}", "--failing-every", "0"]))
                nodes.append(try await NodeProcess.start(executable: skynetBinary, name: "gamma",
                                                         arguments: ["--job", "up=echo '\u{1B}[2J\u{1B}]0;title\u{07}' {}", "--failing-every", "0"]))
                let cluster = TestCluster(nodes: nodes, folder: folder)
                try cluster.writeClusterFile()
                let run = try await cluster.scan(["--job", "up=echo up {}", "--local-capacity", "0", "--total", "4", "--quiet"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.lines.contains { $0.contains("gamma") && $0.contains(#"\x1b[2J\x1b]0;title\x07"#) }, "\(run.stdout)")
                #expect(!run.stdout.contains("\u{1B}") && !run.stdout.contains("\u{07}"))
                await stopAll()
            } catch {
                await stopAll()
                throw error
            }
        }
    }
}
