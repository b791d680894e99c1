import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime
import Testing

extension ProcessTests {
    /// `scan --transfer`, `--return`, `--cleanup`, `--trc`, `--basefile` and `--max-file-size`
    /// as a user types them: usage errors, and a scan that runs only on this process's own
    /// system, where nothing is copied and each returned file is checked and hashed in place.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct ScanFileOptionTests {
        @Test(arguments: [
            (["--trc", "{}.out"], "files travel with the tasks of a command job: give --job NAME=COMMAND (the built-in scan takes none)"),
            (["--job", "t=cat", "--transfer"], "--transfer sends each input as a file: give --inputs FILE, one path a line"),
            (["--job", "t=cat", "--return", "{%}.x"], "--return {%}.x: {%} (the job slot) cannot name a returned file"),
            (["--job", "t=cat", "--return", "a b"], "--return a b: a --return template is one word (one file), not 2"),
            (["--job", "t=cat", "--basefile", "no-such-basefile"], "--basefile no-such-basefile: cannot send no-such-basefile"),
            (["--job", "t=cat", "--basefile", "../x"], "--basefile ../x: \"../x\": a \"..\" component is refused"),
            (["--job", "t=cat", "--basefile", "a\nb"], "--basefile a\\x0ab: \"a\\nb\": a name with a newline cannot be sent"),
            (["--job", "t=cat", "--max-file-size", "5"], "--max-file-size bounds the files of --transfer, --return and --basefile"),
            (["--job", "t=cat", "--trc", "{}.o", "--max-file-size", "0"], "option '--max-file-size'"),
        ])
        func badFileUsageExitsWithStatusTwoAndSaysWhatIsWrong(arguments: [String], message: String) async throws {
            let run = try await runSkynet(["scan"] + arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: \(message)"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }

        @Test func aBasefileOverTheLimitIsAUsageErrorWithBothSizes() async throws {
            try await withScratchFolder { folder in
                let path = folder.appendingPathComponent("model.bin").path
                try Data(repeating: 7, count: 3000).write(to: URL(fileURLWithPath: path))
                let run = try await runSkynet(["scan", "--job", "t=cat", "--basefile", path, "--max-file-size", "1K"])
                #expect(run.status == 2)
                #expect(run.stderr.contains("error: --basefile \(path) is 2.9 KiB, over --max-file-size 1 KiB"), "\(run.stderr)")
            }
        }

        /// On this process's own system nothing is copied: the command runs on the input where
        /// it is, and its returned file must be there; `--json` carries its size and SHA-256.
        @Test func theLocalSystemRunsInPlaceAndHashesWhatItReturns() async throws {
            try await withScratchFolder { folder in
                var inputs: [String] = []
                for (index, size) in [0, 1, 70_000].enumerated() {
                    let path = folder.appendingPathComponent("in \(index).bin").path
                    try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }).write(to: URL(fileURLWithPath: path))
                    inputs.append(path)
                }
                let list = try writeLines(inputs, to: folder, named: "inputs.txt")
                let run = try await runSkynet(["scan", "--job", "t=cp {} {}.out", "--inputs", list, "--trc", "{}.out",
                                               "--failing-every", "0", "--json"])
                #expect(run.status == 0, "\(run.stderr)")
                let completed = try SSHScanHarness.events(run.stdout).filter { $0["event"]?.string == "completed" }
                #expect(completed.count == 3)
                for event in completed {
                    let input = try #require(event["text"]?.string)
                    let copy = try Data(contentsOf: URL(fileURLWithPath: input + ".out"))
                    #expect(copy == (try Data(contentsOf: URL(fileURLWithPath: input))))
                    let files = try #require(event["files"]?.array)
                    #expect(files.count == 1)
                    #expect(files.first?["path"]?.string == input + ".out")
                    #expect(files.first?["size"]?.int == copy.count)
                    #expect(files.first?["sha256"]?.string == Secrets.hex(SHA256.hash([UInt8](copy))))
                }
            }
        }

        /// A command that leaves no file where its template says fails, and runs again.
        @Test func aMissingReturnFileFailsTheTaskAndItRunsAgain() async throws {
            try await withScratchFolder { folder in
                let input = folder.appendingPathComponent("a.txt").path
                try "x".write(toFile: input, atomically: true, encoding: .utf8)
                let list = try writeLines([input], to: folder, named: "inputs.txt")
                let run = try await runSkynet(["scan", "--job", "t=true", "--inputs", list, "--return", "{.}.png",
                                               "--failing-every", "0", "--max-attempts", "2"])
                #expect(run.status == 1)
                let png = folder.appendingPathComponent("a.png").path
                #expect(run.stdout.contains("Re-run task: 0. Failed with: did not produce \(png)"), "\(run.stdout)")
                #expect(run.stdout.contains("Gave up on task 0 after 2 attempts: did not produce \(png)"), "\(run.stdout)")
            }
        }
    }
}
