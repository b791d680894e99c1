import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import Testing

extension ProcessTests {
    /// A scan whose stdout cannot be written: a full disk is reported once and fails the scan;
    /// a reader that went away stops it at once, like Ctrl-C, and it exits 141 as `yes | head`.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct BrokenStdoutTests {
        @Test(arguments: [false, true])
        func aFullStdoutIsReportedOnceAndTheScanExitsOne(results: Bool) async throws {
            try await withScratchFolder { folder in
                let inputs = try writeLines((0..<50).map(String.init), to: folder, named: "in.txt")
                let run = try await runSkynet(["scan", "--job", "e=echo {}", "--inputs", inputs, "--failing-every", "0", "--quiet"]
                                                + (results ? ["--results"] : []),
                                              stdout: .file("/dev/full", append: true), in: folder)
                #expect(run.status == 1, "\(run.stderr)")
                #expect(run.errorLines.filter { $0 == "error: stdout: No space left on device" }.count == 1, "\(run.stderr)")
                #expect(!run.errorLines.contains("Done."))
            }
        }

        /// A result whose write to stdout failed is not marked printed in the journal: the
        /// resume prints it, so no completed sector is lost between the two runs.
        @Test(arguments: [false, true])
        func aResultThatCouldNotBeWrittenIsPrintedByTheResume(keepOrder: Bool) async throws {
            try await withScratchFolder { folder in
                let inputs = try writeLines((0..<40).map(String.init), to: folder, named: "in.txt")
                let journal = folder.appendingPathComponent("journal.jsonl").path
                let arguments = ["scan", "--job", "e=echo r{}", "--inputs", inputs, "--results", "--journal", journal,
                                 "--failing-every", "0", "--quiet"] + (keepOrder ? ["--keep-order"] : [])
                let first = try await runSkynet(arguments, stdout: .file("/dev/full", append: true), in: folder)
                #expect(first.status == 1, "\(first.stderr)")
                let second = try await runSkynet(arguments + ["--resume"])
                #expect(second.status == 0, "\(second.stderr)")
                // Nothing reached the first run's stdout: the resume prints every sector.
                let expected = (0..<40).map { "r\($0)" }
                #expect((keepOrder ? second.lines : second.lines.sorted()) == (keepOrder ? expected : expected.sorted()))
            }
        }

        @Test func aReaderThatLeavesStopsTheScanAtOnceKeepsTheJournalAndExits141() async throws {
            try await withScratchFolder { folder in
                // Sector 0 answers at once; every other one takes 30 s.
                let inputs = try writeLines(["0"] + Array(repeating: "30", count: 8), to: folder, named: "in.txt")
                let journal = folder.appendingPathComponent("journal.jsonl").path
                let errPath = folder.appendingPathComponent("stderr").path
                var options = ChildProcess.Options(arguments: [
                    "scan", "--job", #"nap=sh -c 'sleep "$0"; echo "$0"' {}"#, "--inputs", inputs, "--results",
                    "--local-capacity", "4", "--failing-every", "0", "--journal", journal, "--quiet",
                ], environment: ProcessInfo.processInfo.environment)
                options.stdout = .pipe
                options.stderr = .file(errPath, append: false)
                options.workingDirectory = folder.path
                let scan = try ChildProcess.spawn(skynetBinary.path, options)
                defer { scan.send(SIGKILL) }
                let reader = try #require(scan.takeOutputPipe(1))
                // The reader takes one line and leaves, as `head -n1` does.
                let first = try await withTimeout(.seconds(30)) {
                    try await onOwnThread(named: "test-head") { () -> String in
                        var line: [UInt8] = [], byte: UInt8 = 0
                        while read(reader, &byte, 1) == 1, byte != 10 { line.append(byte) }
                        return String(decoding: line, as: UTF8.self)
                    }
                }
                close(reader)
                let left = ContinuousClock.now
                let exit = try await withTimeout(.seconds(45)) { await scan.exit.value }
                let after = ContinuousClock.now - left
                let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
                #expect(first == "0")
                #expect(exit.status == 141, "\(stderr)")
                // The running tasks (30 s each) were cancelled, not waited for.
                #expect(after < .seconds(15), "exited \(after) after the reader left")
                #expect(stderr.contains("Stopped: 1 completed, 0 failed, 8 not run."), "\(stderr)")
                #expect(!stderr.contains("Done."))
                let entries = try ScanJournal.read(path: journal).entries
                #expect(entries.map(\.input) == [0])
            }
        }
    }
}
