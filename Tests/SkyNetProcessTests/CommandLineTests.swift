import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
@testable import SkyNetWork
import Testing

extension ProcessTests {
    /// The `skynet` executable as a user runs it: output lines, exit status, usage errors.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct CommandLineTests {
        @Test func theReferenceScanCompletesEverySectorOnceAndReRunsTwo() async throws {
            let run = try await runSkynet(["scan", "--total", "20", "--duration", "0.2"])
            #expect(run.status == 0)
            let completed = run.lines.filter { $0.hasPrefix("Completed: ") }.map { $0.dropFirst("Completed: ".count) }
            #expect(completed.sorted { Int($0)! < Int($1)! } == (0..<20).map { Substring(String($0)) })
            let reruns = run.lines.filter { $0.hasPrefix("Re-run task: ") }
            #expect(reruns.count == 2)
            #expect(reruns.allSatisfy { $0.hasSuffix(". Failed with: UnreliableAPI.action(failingEvery:) failed.") })
            #expect(run.lines.suffix(2).first == "Done.")
            #expect(run.lines.last?.hasPrefix("Finished 20 scans in ") == true)
        }

        @Test func aTaskThatUsesUpItsAttemptsExitsWithStatusOne() async throws {
            // Every call fails: each task gives up after its attempts.
            let run = try await runSkynet(["scan", "--total", "3", "--duration", "0", "--failing-every", "1", "--max-attempts", "2"])
            #expect(run.status == 1)
            let gaveUp = run.lines.filter { $0.hasPrefix("Gave up on task ") }
            #expect(gaveUp.count == 3)
            #expect(gaveUp.allSatisfy { $0.hasSuffix(" after 2 attempts: UnreliableAPI.action(failingEvery:) failed.") })
            // The seconds depend on the machine (a sanitizer build is slower): only the count is fixed.
            #expect(run.lines.last?.hasPrefix("Finished 0 scans in ") == true)
        }

        @Test(arguments: [
            (["scan", "--totl", "3"], "unknown option '--totl'. Did you mean '--total'?"),
            (["scan", "--total", "-1"], "option '--total' wants a whole number"),
            (["scan", "--duration", "nan"], "option '--duration' wants a number of seconds"),
            (["scan", "--total"], "option '--total' needs a value"),
            (["scan", "--cluster", "missing.json"], "cluster file missing.json: does not exist"),
            (["launch"], "unknown command 'launch'"),
            (["scan", "--capacity", "0", "--spawn", "1"], "no system has a slot to run tasks"),
            (["scan", "--resume"], "--resume needs --journal FILE"),
            (["scann"], "unknown command 'scann'. Did you mean 'scan'?"),
            (["stat"], "unknown command 'stat'. Did you mean 'status'?"),
            (["scan", "--spawn", "1", "--duration", "2", "--timeout", "1.5"],
             "--timeout 1.5 is not longer than --duration 2: every remote task would time out; give --timeout above 2"),
            (["scan", "--spawn", "1", "--duration", "6"], "the default --timeout 5 is not longer than --duration 6"),
        ])
        func badUsageExitsWithStatusTwoAndSaysWhatIsWrong(arguments: [String], message: String) async throws {
            let run = try await runSkynet(arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: \(message)"))
            #expect(run.stdout.isEmpty)
        }

        @Test func anUnknownCommandListsTheCommands() async throws {
            let run = try await runSkynet(["launch"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("The commands are scan, node, status"))
            #expect(!run.stderr.contains("Did you mean"))
        }

        @Test func aClusterFileTimeoutNotLongerThanTheDurationIsRefused() async throws {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-timeout-\(UUID().uuidString).json").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            try #"{"timeout":0.5,"nodes":[{"name":"a","host":"127.0.0.1","port":9001}]}"#.write(toFile: file, atomically: true, encoding: .utf8)
            let refused = try await runSkynet(["scan", "--cluster", file, "--duration", "0.5"])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("error: the cluster file's timeout 0.5 is not longer than --duration 0.5"))
            // Without peers the timeout is never used: nothing to refuse.
            let local = try await runSkynet(["scan", "--total", "1", "--duration", "0.1", "--timeout", "0.05", "--failing-every", "0"])
            #expect(local.status == 0)
        }

        @Test func resumingFromAJournalThatDoesNotExistSaysSoAndStartsOne() async throws {
            let journal = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-journal-\(UUID().uuidString).jsonl").path
            defer { try? FileManager.default.removeItem(atPath: journal) }
            let run = try await runSkynet(["scan", "--total", "3", "--duration", "0", "--failing-every", "0", "--journal", journal, "--resume"])
            #expect(run.status == 0)
            #expect(run.stderr.contains("no journal at \(journal): starting a new one"))
            #expect(try ScanJournal.read(path: journal).entries.map(\.input).sorted() == [0, 1, 2])
            // The second time there is one: no such line.
            let again = try await runSkynet(["scan", "--total", "3", "--duration", "0", "--journal", journal, "--resume"])
            #expect(again.status == 0)
            #expect(!again.stderr.contains("no journal"))
            #expect(again.stdout.contains("Resumed: 3 sectors from \(journal)"))
        }

        @Test func helpAndVersionExitZero() async throws {
            let help = try await runSkynet(["scan", "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("usage: skynet scan"))
            let version = try await runSkynet(["--version"])
            #expect(version.status == 0)
            #expect(version.stdout.hasPrefix("skynet "))
        }
    }
}
