import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// Inputs from a pipe or a device that never ends: read only as far as the scan needs.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct PipedInputsTests {
        /// `yes | skynet scan --inputs - --total 5`: five tasks, and the endless pipe is no
        /// reason to read on (the run ends because the scan stopped reading, not the disk).
        @Test func anEndlessPipeWithATotalRunsThatManyTasks() async throws {
            let run = try await runProgram("/bin/sh", [
                "-c", #"yes | exec "$0" scan --inputs - --total 5 --job e='echo {}' --results --quiet"#, skynetBinary.path,
            ], limit: .seconds(60))
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines == Array(repeating: "y", count: 5))
        }

        /// An empty inputs file runs nothing and says why on stderr (a file, and stdin), then
        /// exits 0 as GNU parallel does.
        @Test func anEmptyInputsFileSaysSo() async throws {
            let empty = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-empty-\(UUID().uuidString).txt").path
            try Data().write(to: URL(fileURLWithPath: empty))
            defer { try? FileManager.default.removeItem(atPath: empty) }
            let run = try await runSkynet(["scan", "--inputs", empty, "--job", "e=echo {}"], limit: .seconds(60))
            #expect(run.status == 0)
            #expect(run.stderr.contains("no inputs in \(empty)\n"), "\(run.stderr)")
            #expect(run.lines.last?.hasPrefix("Finished 0 scans in ") == true)
            let piped = try await runProgram("/bin/sh", ["-c", #"exec "$0" scan --inputs - --job e='echo {}' --results < /dev/null"#,
                                                         skynetBinary.path], limit: .seconds(60))
            #expect(piped.status == 0)
            #expect(piped.stderr.contains("no inputs on stdin\n"), "\(piped.stderr)")
            #expect(piped.stdout.isEmpty)
            // --total 0 asked for none: the file is not empty.
            let two = empty + ".two"
            try "a\nb\n".write(toFile: two, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: two) }
            let none = try await runSkynet(["scan", "--inputs", two, "--total", "0", "--job", "e=echo {}"], limit: .seconds(60))
            #expect(none.status == 0)
            #expect(!none.stderr.contains("no inputs"), "\(none.stderr)")
        }

        /// `/dev/zero` is refused at its first line, by the message a file of NUL bytes gets.
        @Test func aDeviceOfNULBytesIsRefusedAtLineOne() async throws {
            let run = try await runSkynet(["scan", "--inputs", "/dev/zero", "--job", "e=echo {}", "--results"], limit: .seconds(60))
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: inputs /dev/zero line 1 holds a NUL byte, which no command argument can carry"),
                    "\(run.stderr)")
        }
    }
}
