import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// The closing lines say what they count: failed attempts per system, tasks that gave up
    /// in all, every system that took part, and `Done.` only for a scan that completed.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct SummaryTests {
        @Test func theTableCountsFailedAttemptsAndTheFinishedLineHowManyGaveUp() async throws {
            try await withScratchFolder { folder in
                let inputs = try writeLines(["a", "b", "c"], to: folder, named: "in.txt")
                let arguments = ["scan", "--job", "fail=sh -c 'exit 3'", "--inputs", inputs, "--max-attempts", "2",
                                 "--local-capacity", "2", "--quiet"]
                let run = try await runSkynet(arguments)
                #expect(run.status == 1)
                // Every task had its outcome: the scan is done, and says how many gave up.
                #expect(run.lines.contains("Done."))
                let finished = try #require(run.lines.last)
                #expect(finished.hasPrefix("Finished 0 scans in ") && finished.hasSuffix(" seconds, 3 gave up."), "\(finished)")
                let table = run.stderr.split(separator: "\n").map(String.init)
                #expect(table.first == "system  completed  attempts failed  re-runs  busy  mean s  share", "\(run.stderr)")
                let local = try #require(table.first { $0.hasPrefix("local ") })
                #expect(local.split(separator: " ").prefix(4) == ["local", "0", "6", "3"], "\(local)")

                let json = try await runSkynet(arguments + ["--json"])
                let summary = try #require(json.lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
                #expect(summary["failed"] as? Int == 3)
                #expect(summary["gave_up"] as? Int == 3)
                let system = try #require((summary["systems"] as? [String: Any])?["local"] as? [String: Any])
                #expect(system["failed"] as? Int == 6)
                #expect(system["attempts_failed"] as? Int == 6)
            }
        }

        @Test func afterCtrlCEverySystemThatTookPartIsListedAndThereIsNoDone() async throws {
            try await withScratchFolder { folder in
                let inputs = try writeLines(["30", "30", "30", "30"], to: folder, named: "in.txt")
                let scan = try RunningProcess(["scan", "--spawn", "1", "--capacity", "1", "--job", "nap=sleep {}",
                                               "--inputs", inputs, "--failing-every", "0", "--quiet"])
                try await scan.waitForLine { $0 == "[Cluster] Connected: node1" }
                scan.send(SIGINT)
                let run = try await scan.finish()
                #expect(run.status == 130)
                #expect(!run.lines.contains("Done."))
                #expect(run.lines.contains("Stopped: 0 completed, 0 failed, 4 not run."), "\(run.stdout)")
                let table = run.stderr.split(separator: "\n").map(String.init)
                #expect(table.contains { $0.hasPrefix("local ") }, "\(run.stderr)")
                #expect(table.contains { $0.hasPrefix("node1 ") }, "\(run.stderr)")
            }
        }

        @Test func inputsCutShortMidScanPrintTheErrorBeforeFinishedAndNoDone() async throws {
            try await withScratchFolder { folder in
                // Read 1,024 lines at a time, one batch ahead: the third batch finds the file cut.
                // Long lines: the file is far more than a read's buffer.
                let inputs = try writeLines(Array(repeating: String(repeating: "x", count: 2000), count: 6000), to: folder, named: "in.txt")
                let cluster = try writeLines([#"{"nodes":[]}"#], to: folder, named: "cluster.json")
                let scan = try RunningProcess(["scan", "--cluster", cluster, "--inputs", inputs, "--duration", "0.02", "--failing-every", "0",
                                               "--local-capacity", "4", "--results", "--quiet"])
                try await scan.waitForErrorLine { $0.hasPrefix("Completed: ") }
                #expect(truncate(inputs, 0) == 0)
                let run = try await scan.finish(timeout: .seconds(90))
                #expect(run.status == 1)
                let lines = run.stderr.split(separator: "\n").map(String.init)
                #expect(!lines.contains("Done."), "\(lines.suffix(5))")
                let error = try #require(lines.firstIndex { $0.hasPrefix("error: inputs ") && $0.contains("changed while the scan read it") })
                let finished = try #require(lines.firstIndex { $0.hasPrefix("Finished ") })
                #expect(error < finished, "\(lines.suffix(5))")
            }
        }
    }
}
