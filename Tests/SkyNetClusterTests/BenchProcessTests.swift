import Foundation
import Testing
@testable import SkyNet

extension ProcessTests {
    /// `skynet-bench` as a user runs it, on a workload that fails at once.
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

        static func results(_ path: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        }
    }
}
