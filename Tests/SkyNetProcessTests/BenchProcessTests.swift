import Foundation
import Testing
@testable import SkyNet

extension ProcessTests {
    /// `skynet-bench` as a user runs it, on a workload that fails at once and on W8, the
    /// shortest one with a GNU parallel column.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct BenchProcessTests {
        /// `skynet-bench`, built beside `skynet`.
        static let bench = skynetBinary.deletingLastPathComponent().appendingPathComponent("skynet-bench").path

        @Test func aWorkloadThatFailsMakesTheBenchExitNonZeroAfterItsTableAndFile() async throws {
            try await withScratchFolder { folder in
                // W13 needs ssh on PATH: with none it fails before it starts anything.
                let emptyBin = folder.appendingPathComponent("bin").path
                try FileManager.default.createDirectory(atPath: emptyBin, withIntermediateDirectories: true)
                let out = folder.appendingPathComponent("bench.json").path
                let run = try await runProgram(Self.bench, ["--only", "W13", "--runs", "1", "--out", out], environment: ["PATH": emptyBin])
                #expect(run.status == 1, "stderr: \(run.stderr)")
                #expect(run.stderr.contains("W13 failed: W13: ssh is not on PATH"), "stderr: \(run.stderr)")
                #expect(run.stdout.contains("wrote \(out)"), "stdout: \(run.stdout)")
                let root = try Self.results(out)
                #expect((root["failed"] as? [String])?.count == 1)
                #expect((root["failed"] as? [String])?.first?.contains("ssh is not on PATH") == true, "\(root)")
            }
        }

        @Test func aParallelOnPathThatIsNotGNUParallelIsSkippedLikeAMissingOne() async throws {
            try await withScratchFolder { folder in
                let bin = folder.appendingPathComponent("bin").path
                try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
                // What moreutils' `parallel` does with an option it does not know.
                try writeScript("""
                    #!/bin/sh
                    echo "parallel: unrecognized option '$1'" >&2
                    echo "parallel [OPTIONS] command -- arguments" >&2
                    exit 1
                    """, to: bin + "/parallel")
                let out = folder.appendingPathComponent("bench.json").path
                let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
                let run = try await runProgram(Self.bench, ["--only", "W8", "--runs", "1", "--out", out], limit: .seconds(150),
                                               environment: ["PATH": path])
                #expect(run.status == 0, "stderr: \(run.stderr)")
                let rows = try #require(try Self.results(out)["rows"] as? [[String: Any]])
                let ours = try #require(rows.first { $0["measure"] as? String == "2000 x /bin/true, ours" }, "\(rows)")
                #expect((ours["median"] as? Double ?? 0) > 0)
                let parallel = try #require(rows.first { $0["measure"] as? String == "GNU parallel -j12 true" }, "\(rows)")
                #expect(parallel["median"] is NSNull)
                #expect((parallel["skipped"] as? String)?.contains("\(bin)/parallel is not GNU parallel") == true, "\(parallel)")
                #expect(!rows.contains { ($0["measure"] as? String)?.contains("/ GNU parallel") == true }, "\(rows)")
            }
        }

        /// A4 on real processes: a node of the bench's own program SIGKILLed with 100 calls in
        /// flight. Every call ends, each failure within 2 s of the kill, none runs twice (the
        /// nodes journal what they run), and an actor with a restart policy answers again.
        @Test func aNodeKilledWithCallsInFlightFailsThemAtOnceAndRunsNoneTwice() async throws {
            try await withScratchFolder { folder in
                let out = folder.appendingPathComponent("bench.json").path
                let run = try await runProgram(Self.bench, ["--only", "A4", "--runs", "1", "--out", out], limit: .seconds(150))
                #expect(run.status == 0, "stderr: \(run.stderr)")
                let rows = try #require(try Self.results(out)["rows"] as? [[String: Any]])
                func value(_ measure: String) -> Double? {
                    rows.first { $0["measure"] as? String == measure }?["median"] as? Double
                }
                #expect(value("calls that hung") == 0, "\(rows)")
                #expect(value("calls run twice") == 0, "\(rows)")
                #expect((value("calls that failed") ?? 0) > 0, "the kill failed calls: \(rows)")
                #expect((value("slowest failure after the kill") ?? .infinity) <= 2000, "\(rows)")
                #expect((value("restarted actor answers after") ?? .infinity) <= 10_000, "\(rows)")
                #expect(try await ActorExampleTests.nodesLeft(program: "skynet-bench").isEmpty)
            }
        }

        static func results(_ path: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        }

        func writeScript(_ text: String, to path: String) throws {
            try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
    }
}
