import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import Testing

extension ProcessTests {
    /// `skynet scan` running real work: a command job over inputs from a file, on spawned nodes.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ScanJobTests {
        /// 1,000 inputs a shell would mangle, and some it would not.
        static let trickyInputs: [String] = {
            let pieces = ["a b", "'quoted'", "\"double\"", "$(touch pwned)", "`id`", "; rm -rf x", "*", "-n", "--help",
                          "ünïcødé", "日本語", "tab\there", "back\\slash", "  lead and trail  ", "$HOME", "a|b>c<d", "&", "{}", "{#}", "%s %d"]
            return (0..<1000).map { index in
                let first = pieces[index % pieces.count], second = pieces[(index / pieces.count) % pieces.count]
                return index % 97 == 0 ? "" : "\(first)\(index % 3 == 0 ? " " : "")\(second)"
            }
        }()

        @Test func aThousandTrickyInputsArriveByteExactInInputOrderOverTheWire() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inputs = try write(Self.trickyInputs, to: folder, named: "inputs.txt")
            // No local slots: every task travels to a spawned node and back.
            let run = try await runSkynet(["scan", "--spawn", "2", "--local-capacity", "0", "--job", "echo=printf %s {}",
                                           "--inputs", inputs, "--results", "--keep-order", "--quiet"], limit: .seconds(120))
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            #expect(run.stdout == Self.trickyInputs.map { $0 + "\n" }.joined())
            #expect(run.stderr.contains("Finished 1000 scans in "))
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("pwned").path))
        }

        @Test func resultsInCompletionOrderAreEachInputOnceAndTheLogGoesToStderr() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inputs = Array(Self.trickyInputs.prefix(300))
            let path = try write(inputs, to: folder, named: "inputs.txt")
            let run = try await runSkynet(["scan", "--spawn", "1", "--job", "echo=printf %s {}", "--inputs", path, "--results", "--quiet"])
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
            #expect(lines.sorted() == inputs.sorted())
            #expect(!run.stdout.contains("Completed: "))
            #expect(run.stderr.contains("Completed: 0"))
            #expect(run.stderr.contains("Finished 300 scans in "))
        }

        @Test func aFailingCommandRunsAgainThenGivesUpWithItsStatus() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = folder.appendingPathComponent("fail.sh").path
            try "#!/bin/sh\necho \"starting $1\" >&2\necho \"no such file: $1\" >&2\nexit 3\n".write(toFile: script, atomically: true, encoding: .utf8)
            _ = chmod(script, 0o755)
            let inputs = try write(["first", "second"], to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            let run = try await runSkynet(["scan", "--spawn", "1", "--job", "fail=\(script) {}", "--inputs", inputs,
                                           "--max-attempts", "3", "--journal", journal, "--quiet"])
            #expect(run.status == 1)
            #expect(run.lines.filter { $0.hasPrefix("Re-run task: 0. Failed with: exit status 3: no such file: first") }.count == 2)
            #expect(run.lines.contains("Gave up on task 1 after 3 attempts: exit status 3: no such file: second"))
            let entries = try ScanJournal.read(path: journal).entries
            #expect(entries.map(\.status) == [3, 3])
            #expect(Set(entries.compactMap(\.text)) == ["first", "second"])
            // A given-up sector names the system of its last attempt and that attempt's seconds.
            #expect(entries.allSatisfy { ["local", "node1"].contains($0.system) && $0.seconds > 0 }, "\(entries)")
            let json = try await runSkynet(["scan", "--spawn", "1", "--job", "fail=\(script) {}", "--inputs", inputs,
                                            "--max-attempts", "1", "--json"])
            let failed = json.lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.filter { $0["event"] as? String == "failed" }
            #expect(failed.count == 2)
            #expect(failed.allSatisfy { ["local", "node1"].contains($0["system"] as? String ?? "") && ($0["seconds"] as? Double ?? 0) > 0 },
                    "\(json.stdout)")
        }

        @Test func resumingWithAChangedInputsFileIsAnErrorNeverASkip() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inputs = try write(["one", "two", "three"], to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            let arguments = ["scan", "--spawn", "1", "--job", "echo=printf %s {}", "--inputs", inputs, "--journal", journal, "--quiet"]
            #expect(try await runSkynet(arguments).status == 0)
            let same = try await runSkynet(arguments + ["--resume"])
            #expect(same.status == 0)
            #expect(same.lines.first == "Resumed: 3 sectors from \(journal)")
            _ = try write(["one", "TWO", "three"], to: folder, named: "inputs.txt")
            let changed = try await runSkynet(arguments + ["--resume"])
            #expect(changed.status == 2)
            #expect(changed.stderr.contains("line 2 is not the input the journal ran as sector 1"))
            #expect(!changed.stdout.contains("Completed"))
            // Without --inputs the sectors' inputs are their numbers: not what the journal ran.
            let numbers = try await runSkynet(["scan", "--total", "3", "--journal", journal, "--resume", "--quiet"])
            #expect(numbers.status == 2)
            #expect(numbers.stderr.contains("this scan has none"))
        }

        @Test func resumingWithAnotherJobIsAnErrorNeverASkip() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let inputs = try write(["a", "b", "c", "d"], to: folder, named: "inputs.txt")
            let journal = folder.appendingPathComponent("journal.jsonl").path
            let arguments = ["--inputs", inputs, "--journal", journal, "--quiet"]
            #expect(try await runSkynet(["scan", "--job", "e=echo {}"] + arguments).status == 0)
            let other = try await runSkynet(["scan", "--job", "f=echo X{}", "--resume"] + arguments)
            #expect(other.status == 2, "\(other.stdout)")
            #expect(other.stderr.contains("ran the job 'e', but this scan runs the job 'f'"), "\(other.stderr)")
            #expect(!other.stdout.contains("Completed"))
            // The built-in scan's journal names no job (as v1 journals did); another job is refused on it too.
            let numbers = folder.appendingPathComponent("numbers.jsonl").path
            #expect(try await runSkynet(["scan", "--total", "3", "--duration", "0", "--failing-every", "0", "--journal", numbers, "--quiet"]).status == 0)
            #expect(try String(contentsOfFile: numbers, encoding: .utf8).contains("\"job\"") == false)
            let onScan = try await runSkynet(["scan", "--job", "e=echo {}", "--total", "3", "--journal", numbers, "--resume", "--quiet"])
            #expect(onScan.status == 2)
            #expect(onScan.stderr.contains("ran the job 'scan', but this scan runs the job 'e'"), "\(onScan.stderr)")
            let same = try await runSkynet(["scan", "--job", "e=echo {}", "--resume"] + arguments)
            #expect(same.status == 0)
            #expect(same.lines.first == "Resumed: 4 sectors from \(journal)")
        }

        @Test func aStoppedScanWithKeepOrderStillPrintsTheResultsItHeld() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = folder.appendingPathComponent("slow1.sh").path
            try "#!/bin/sh\nif [ \"$1\" = 1 ]; then sleep 30; fi\necho \"r$1\"\n".write(toFile: script, atomically: true, encoding: .utf8)
            _ = chmod(script, 0o755)
            let inputs = try write((0..<10).map(String.init), to: folder, named: "inputs.txt")
            let scan = try RunningProcess(["scan", "--local-capacity", "3", "--job", "s=\(script) {}", "--inputs", inputs,
                                           "--results", "--keep-order", "--quiet"])
            defer { scan.kill() }
            // Every input but 1 completes; 1 holds the others' results behind it.
            let completed = Locked(0)
            try await scan.waitForErrorLine(timeout: .seconds(60)) { line in
                line.hasPrefix("Completed: ") && completed.withLock { count in
                    count += 1
                    return count == 9
                }
            }
            scan.send(SIGINT)
            let run = try await scan.finish()
            #expect(run.status == 128 + SIGINT)
            #expect(run.stdout == ([0] + Array(2..<10)).map { "r\($0)" }.joined(separator: "\n"), "\(run.stderr)")
            #expect(run.stderr.contains("Stopped: 9 completed, 0 failed, 1 not run."))
        }

        @Test func aBadInputLineIsRefusedBeforeAnyTaskRunsNamingItsLine() async throws {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("inputs.txt").path
            try Data("fine\nalso fine\r\nbad \u{FF}".utf8.map { $0 } + [0xFF, 10]).write(to: URL(fileURLWithPath: path))
            let run = try await runSkynet(["scan", "--job", "echo=printf %s {}", "--inputs", path, "--quiet"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("inputs \(path) line 3 is not valid UTF-8"))
            #expect(run.stdout.isEmpty)
        }

        @Test func theReferenceScanPrintsOnlyResultsWithResultsAndItsLinesOnStderr() async throws {
            let run = try await runSkynet(["scan", "--total", "20", "--duration", "0", "--failing-every", "0", "--results", "--keep-order", "--quiet"])
            #expect(run.status == 0)
            #expect(run.lines == (0..<20).map(String.init))
            #expect(run.stderr.contains("Done.\nFinished 20 scans in "))
        }

        @Test(arguments: [
            (["scan", "--job", "nope"], "no system declares the job 'nope'"),
            (["scan", "--job", "scan=true"], "'scan' is the built-in simulated scan"),
            (["scan", "--job", "bad name=true"], "cannot name a job"),
            (["scan", "--keep-order"], "--keep-order orders the results of --results"),
            (["scan", "--results", "--json"], "--results and --json both want stdout"),
            (["scan", "--inputs", "/nonexistent/inputs.txt"], "inputs /nonexistent/inputs.txt: No such file or directory"),
            (["scan", "--task-timeout", "0"], "option '--task-timeout' wants a number of seconds"),
        ])
        func badJobUsageExitsWithStatusTwo(arguments: [String], message: String) async throws {
            let run = try await runSkynet(arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }

        @Test func theWordCountExampleRunsItsSwiftJobOnItsOwnSystemAndAnInProcessNode() async throws {
            let example = skynetBinary.deletingLastPathComponent().appendingPathComponent("skynet-example-wordcount").path
            let run = try await runProgram(example, [], limit: .seconds(30))
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines.contains("0 [local] 9 words, top letter o×4") || run.lines.contains("0 [node1] 9 words, top letter o×4"))
            #expect(run.lines.last?.hasPrefix("6 of 6 lines done: ") == true)
        }

        private func scratchFolder() throws -> URL {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-jobs-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }

        private func write(_ lines: [String], to folder: URL, named name: String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }
}
