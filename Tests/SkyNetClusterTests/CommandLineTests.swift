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
            #expect(run.lines.last == "Finished 0 scans in 0.00 seconds.")
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
        ])
        func badUsageExitsWithStatusTwoAndSaysWhatIsWrong(arguments: [String], message: String) async throws {
            let run = try await runSkynet(arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: \(message)"))
            #expect(run.stdout.isEmpty)
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
