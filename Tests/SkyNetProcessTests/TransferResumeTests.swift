import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// `--resume` after a returned file was deleted by hand: the journal recorded
    /// each returned file with its size and SHA-256, so only the sector whose file is gone runs
    /// again, and the resume says so once.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct TransferResumeTests {
        /// Runs `skynet scan … --json` in `folder` (relative paths start there); its events.
        func scan(_ arguments: [String], in folder: URL) async throws -> (Finished, [SSHScanHarness.Event]) {
            let out = folder.appendingPathComponent("stdout-\(UUID().uuidString)").path
            let run = try await runSkynet(["scan"] + arguments + ["--json"], stdout: .file(out, append: false), in: folder)
            let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return (run, try SSHScanHarness.events(stdout))
        }

        /// On this process's own system (`local`) and on a spawned node, where the returned
        /// file comes back over the link (`node`).
        @Test(arguments: ["local", "node"])
        func onlyTheSectorWhoseReturnedFileWasDeletedRunsAgain(where place: String) async throws {
            try await withScratchFolder { folder in
                try FileManager.default.createDirectory(at: folder.appendingPathComponent("photos"), withIntermediateDirectories: true)
                let inputs = (0..<4).map { "photos/a\($0).jpg" }
                for (index, input) in inputs.enumerated() {
                    try Data((0..<(3000 + index)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
                        .write(to: folder.appendingPathComponent(input))
                }
                _ = try writeLines(inputs, to: folder, named: "inputs.txt")
                let systems = place == "local" ? [] : ["--spawn", "1", "--local-capacity", "0"]
                let arguments = ["--job", "t=cp {} {}.out", "--inputs", "inputs.txt", "--trc", "{}.out", "--failing-every", "0",
                                 "--journal", "journal.jsonl"] + systems

                let (first, events) = try await scan(arguments, in: folder)
                #expect(first.status == 0, "\(first.stderr)")
                #expect(SSHScanHarness.events("completed", in: events).count == 4)
                let journal = try String(contentsOf: folder.appendingPathComponent("journal.jsonl"), encoding: .utf8)
                #expect(journal.split(separator: "\n").filter { $0.contains(#""files":[{"path":"photos/a"#) }.count == 4, "\(journal)")

                try FileManager.default.removeItem(at: folder.appendingPathComponent("photos/a2.jpg.out"))
                let (resumed, again) = try await scan(arguments + ["--resume"], in: folder)
                #expect(resumed.status == 0, "\(resumed.stderr)")
                let completed = SSHScanHarness.events("completed", in: again)
                #expect(completed.map { $0["input"]?.int } == [2])
                #expect(resumed.stderr.contains(
                    "resume: 1 sector runs again, its returned files changed or are gone (first: photos/a2.jpg.out is missing)"),
                        "\(resumed.stderr)")
                let copy = try Data(contentsOf: folder.appendingPathComponent("photos/a2.jpg.out"))
                #expect(copy == (try Data(contentsOf: folder.appendingPathComponent("photos/a2.jpg"))))

                // Everything is back as journaled: a third resume runs nothing.
                let (done, none) = try await scan(arguments + ["--resume"], in: folder)
                #expect(done.status == 0, "\(done.stderr)")
                #expect(SSHScanHarness.events("completed", in: none).isEmpty)
                #expect(!done.stderr.contains("run again"), "\(done.stderr)")
            }
        }
    }
}
