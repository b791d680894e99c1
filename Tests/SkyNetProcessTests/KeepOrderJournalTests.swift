import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// `--results` with `--keep-order` and `--journal`: what a crash, a resume, a failed task and
    /// a second scan on the same journal do to the output and the journal.
    @Suite(.serialized, .timeLimit(.minutes(4)))
    struct KeepOrderJournalTests {
        @Test func aResumeAfterSIGKILLPrintsWhatKeepOrderHeldBackOnceAndInInputOrder() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (arguments, flag) = try slowSectorScan(in: folder, slow: 5, count: 40, extra: ["--keep-order"])
            let scan = try RunningProcess(arguments)
            defer { scan.kill() }
            // Every sector but 5 completes: 0…4 are printed, 6…39 are journaled and held back.
            try await waitForErrorLines(scan, 39) { $0.hasPrefix("Completed: ") }
            scan.send(SIGKILL)
            let first = try await scan.finish(timeout: .seconds(20))
            #expect(first.status == SIGKILL)
            try FileManager.default.removeItem(atPath: flag)
            let second = try await runSkynet(arguments + ["--resume"])
            #expect(second.status == 0, "\(second.stderr)")
            // Each run prints in input order, and together they hold every sector once.
            #expect(first.lines == (0..<5).map { "r\($0)" }, "\(first.stderr)")
            #expect(first.lines + second.lines == (0..<40).map { "r\($0)" }, "\(second.stderr)")
        }

        @Test func aResumeAfterSIGKILLWithoutKeepOrderPrintsEachSectorOnce() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (arguments, flag) = try slowSectorScan(in: folder, slow: 5, count: 40, extra: [])
            let scan = try RunningProcess(arguments)
            defer { scan.kill() }
            try await waitForErrorLines(scan, 39) { $0.hasPrefix("Completed: ") }
            scan.send(SIGKILL)
            let first = try await scan.finish(timeout: .seconds(20))
            try FileManager.default.removeItem(atPath: flag)
            let second = try await runSkynet(arguments + ["--resume"])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.lines == ["r5"], "\(second.stderr)")
            #expect((first.lines + second.lines).sorted() == (0..<40).map { "r\($0)" }.sorted())
        }

        /// The writer thread journals a sector, then blocks writing its result to a stdout that
        /// nobody reads: a SIGKILL there leaves a sector journaled and never printed.
        @Test func aResultJournaledButNotYetPrintedWhenKilledIsPrintedByTheResume() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = try writeScript("#!/bin/sh\nprintf 'r%s-%01000d\\n' \"$1\" 0\n", in: folder, named: "kilobyte.sh")
            let inputs = try write((0..<300).map(String.init), to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            let arguments = ["scan", "--local-capacity", "2", "--job", "k=\(script) {}", "--inputs", inputs,
                             "--results", "--journal", journal, "--quiet"]
            var options = ChildProcess.Options(arguments: arguments, environment: ProcessInfo.processInfo.environment)
            options.stdout = .pipe
            options.stderr = .file(folder.appendingPathComponent("err").path, append: false)
            let child = try ChildProcess.spawn(skynetBinary.path, options)
            defer { child.send(SIGKILL) }
            let reader = try #require(child.takeOutputPipe(1))
            defer { close(reader) }
            // Nobody reads stdout: the pipe fills, and the writer stops at a result whose journal
            // line it has written. Wait until the journal stops growing.
            var lines = -1, steady = 0
            for _ in 0..<200 where steady < 3 {
                try await Task.sleep(for: .milliseconds(200))
                let now = journalLineCount(journal)
                steady = now > 10 && now == lines ? steady + 1 : 0
                lines = now
            }
            #expect(lines > 10 && lines < 300)
            child.send(SIGKILL)
            _ = try await withTimeout(.seconds(10)) { await child.exit.value }
            let first = readAll(reader).split(separator: "\n").map(String.init)
            let second = try await runSkynet(arguments + ["--resume"])
            #expect(second.status == 0, "\(second.stderr)")
            let all = (first + second.lines).map { $0.prefix { $0 != "-" } }
            #expect(all.count == 300)
            #expect(Set(all) == Set((0..<300).map { "r\($0)" }))
        }

        @Test func keepOrderGivesATaskThatGaveUpAnEmptyLineInItsPlace() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = try writeScript("#!/bin/sh\nif [ \"$1\" = 2 ]; then exit 3; fi\necho \"r$1\"\n", in: folder, named: "fail2.sh")
            let inputs = try write((0..<6).map(String.init), to: folder, named: "inputs.txt")
            let run = try await runSkynet(["scan", "--local-capacity", "2", "--job", "f=\(script) {}", "--inputs", inputs,
                                           "--max-attempts", "1", "--results", "--keep-order", "--quiet"])
            #expect(run.status == 1)
            #expect(run.stdout == "r0\nr1\n\nr3\nr4\nr5\n", "\(run.stderr)")
            #expect(run.stderr.contains("Gave up on task 2 after 1 attempts: exit status 3"))
        }

        @Test func aJournalThatExistsIsRefusedWithoutResumeAndNothingIsAppended() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inputs = try write(["a", "b", "c"], to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            // An empty journal is as good as none.
            try Data().write(to: URL(fileURLWithPath: journal))
            let arguments = ["scan", "--job", "e=echo {}", "--inputs", inputs, "--journal", journal, "--quiet"]
            #expect(try await runSkynet(arguments).status == 0)
            let written = try Data(contentsOf: URL(fileURLWithPath: journal))
            #expect(written.count > 0)
            let again = try await runSkynet(arguments)
            #expect(again.status == 2)
            #expect(again.stderr == "error: \(journal) exists: add --resume to continue it, or remove it\n")
            #expect(again.stdout.isEmpty)
            #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == written)
        }

        @Test func aSecondScanOnAJournalInUseIsRefusedNamingTheFirstOnesPID() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (arguments, flag) = try slowSectorScan(in: folder, slow: 1, count: 3, extra: [], results: false)
            let first = try RunningProcess(arguments)
            defer { first.kill() }
            try await first.waitForLine { $0 == "Completed: 0" }
            let message = "error: journal \(folder.appendingPathComponent("journal.jsonl").path) is in use by the scan with PID \(first.pid): wait for it to end, or use another journal"
            for extra in [["--resume"], []] {
                let second = try await runSkynet(arguments + extra, limit: .seconds(20))
                #expect(second.status == 2)
                #expect(second.stderr == message + "\n")
            }
            try FileManager.default.removeItem(atPath: flag)
            let run = try await first.finish()
            #expect(run.status == 0)
            #expect(run.lines.filter { $0.hasPrefix("Completed: ") }.count == 3)
        }

        /// 255 results of 500 KB wait behind a slow sector 0: the peak of the process stays
        /// within 1.5× of what it holds (before: about 4×, a copy per step on the way out).
        @Test func keepOrderHoldsEachWaitingResultOnceOnItsWayOut() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let first = folder.appendingPathComponent("hold0").path, last = folder.appendingPathComponent("hold256").path
            _ = FileManager.default.createFile(atPath: first, contents: nil)
            _ = FileManager.default.createFile(atPath: last, contents: nil)
            let script = try writeScript("""
                #!/bin/sh
                if [ "$1" = 0 ]; then while [ -e '\(first)' ]; do sleep 0.05; done; fi
                if [ "$1" = 256 ]; then while [ -e '\(last)' ]; do sleep 0.05; done; fi
                head -c 512000 /dev/zero | tr '\\0' a

                """, in: folder, named: "big.sh")
            let inputs = try write((0..<257).map(String.init), to: folder, named: "inputs.txt")
            var options = ChildProcess.Options(
                arguments: ["scan", "--local-capacity", "4", "--job", "b=\(script) {}", "--inputs", inputs, "--max-output", "512000",
                            "--results", "--keep-order", "--quiet"],
                environment: ProcessInfo.processInfo.environment)
            options.stdout = .null
            options.stderr = .lines(keep: 10_000)
            let child = try ChildProcess.spawn(skynetBinary.path, options)
            defer {
                child.send(SIGKILL)
                try? FileManager.default.removeItem(atPath: first)
                try? FileManager.default.removeItem(atPath: last)
            }
            let log = try #require(child.stderrLines)
            func completed(_ count: Int) async throws {
                let seen = Locked(0)
                let line = try await withTimeout(.seconds(120)) {
                    await log.first { $0.hasPrefix("Completed: ") && seen.withLock { $0 += 1; return $0 >= count } }
                }
                _ = try #require(line, "\(log.lines)")
            }
            try await completed(1)
            let base = try statusBytes(of: child.pid, "VmRSS")
            try await completed(255)
            let held = 255 * 512_000
            try FileManager.default.removeItem(atPath: first)
            _ = try #require(try await withTimeout(.seconds(60)) { await log.first { $0 == "Completed: 0" } })
            let peak = try statusBytes(of: child.pid, "VmHWM")
            try FileManager.default.removeItem(atPath: last)
            _ = try await withTimeout(.seconds(60)) { await child.exit.value }
            #expect(await child.exit.value.status == 0)
            #expect(peak - base <= held * 3 / 2, "peak \(peak >> 20) MiB, base \(base >> 20) MiB, held \(held >> 20) MiB")
        }

        // MARK: helpers

        /// A scan of `count` inputs whose sector `slow` waits until the returned flag file is
        /// removed; results go to stdout (`results`), journaled in the folder's journal.jsonl.
        private func slowSectorScan(in folder: URL, slow: Int, count: Int, extra: [String], results: Bool = true) throws -> ([String], String) {
            let flag = folder.appendingPathComponent("slow").path
            _ = FileManager.default.createFile(atPath: flag, contents: nil)
            let script = try writeScript("#!/bin/sh\nif [ \"$1\" = \(slow) ]; then while [ -e '\(flag)' ]; do sleep 0.05; done; fi\necho \"r$1\"\n",
                                         in: folder, named: "slow.sh")
            let inputs = try write((0..<count).map(String.init), to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            return (["scan", "--local-capacity", "4", "--job", "s=\(script) {}", "--inputs", inputs, "--journal", journal, "--quiet"]
                    + (results ? ["--results"] : []) + extra, flag)
        }

        private func waitForErrorLines(_ scan: RunningProcess, _ count: Int, where predicate: @escaping @Sendable (String) -> Bool) async throws {
            let seen = Locked(0)
            try await scan.waitForErrorLine(timeout: .seconds(60)) { line in
                predicate(line) && seen.withLock { seen in
                    seen += 1
                    return seen >= count
                }
            }
        }

        private func journalLineCount(_ path: String) -> Int {
            ((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()).reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
        }

        /// Everything a pipe holds until its write end is closed.
        private func readAll(_ fd: Int32) -> String {
            var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                bytes += chunk[..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// A field of /proc/PID/status, in bytes.
        private func statusBytes(of pid: Int32, _ name: String) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(name + ":") })
            return try #require(Int(line.filter(\.isNumber))) * 1024
        }

        private func scratchFolder() throws -> URL {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-order-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }

        private func writeScript(_ text: String, in folder: URL, named name: String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            _ = chmod(path, 0o755)
            return path
        }

        private func write(_ lines: [String], to folder: URL, named name: String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }
}
