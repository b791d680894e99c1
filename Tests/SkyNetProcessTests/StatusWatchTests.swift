import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// `skynet status --watch` over a real node and a down port, read through a pipe; and the
    /// ETA of the scan's progress line in a pseudo-terminal.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct StatusWatchTests {
        /// The rounds a piped `--watch` printed: blocks of lines separated by a blank line.
        func rounds(_ stdout: String) -> [[String]] {
            stdout.components(separatedBy: "\n\n").map { $0.split(separator: "\n").map(String.init) }.filter { !$0.isEmpty }
        }

        @Test func watchPrintsARoundEveryIntervalUntilCtrlC() async throws {
            try await withCluster(nodes: 1) { cluster in
                try cluster.writeClusterFile(extra: [.init(name: "gone", host: "127.0.0.1", port: try freePort())])
                let watch = try RunningProcess(["status", "--cluster", cluster.clusterFile, "--watch", "--interval", "0.2"])
                let clock = ContinuousClock()
                try await watch.waitForLine { $0.hasPrefix("Every ") }
                let first = clock.now
                // The fourth header means the first three rounds are out whole (one write a round).
                try await watch.waitForLines(4) { $0.hasPrefix("Every ") }
                // Rounds start 0.2 s apart, never sooner.
                #expect(clock.now - first >= .seconds(0.55))
                let signalled = clock.now
                watch.send(SIGINT)
                let run = try await watch.finish(timeout: .seconds(20))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(clock.now - signalled < .seconds(10))
                let rounds = rounds(run.stdout)
                #expect(rounds.count >= 4)
                for round in rounds.prefix(4) {
                    #expect(round[0].hasPrefix("Every 0.2s: skynet status --cluster \(cluster.clusterFile)  1/2 up  "), "\(round)")
                    #expect(round[1].hasPrefix("name"))
                    #expect(round.count == 4, "\(round)")
                    let beta = try #require(round.first { $0.hasPrefix("beta ") }, "\(round)")
                    #expect(beta.contains(" up ") && beta.contains("0/4"))
                    let gone = try #require(round.first { $0.hasPrefix("gone ") }, "\(round)")
                    #expect(gone.contains("down (refused)"))
                }
            }
        }

        @Test func jsonWatchPrintsOneObjectPerNodePerRoundUntilSIGTERM() async throws {
            try await withCluster(nodes: 1) { cluster in
                try cluster.writeClusterFile(extra: [.init(name: "gone", host: "127.0.0.1", port: try freePort())])
                let watch = try RunningProcess(["status", "--cluster", cluster.clusterFile, "--watch", "--json", "--interval", "0.2"])
                try await watch.waitForLines(2) { $0.hasPrefix(#"{"round":3,"#) }
                watch.send(SIGTERM)
                let run = try await watch.finish(timeout: .seconds(20))
                #expect(run.status == 0, "\(run.stderr)")
                let objects = try run.lines.map { line in
                    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
                }
                let byRound = Dictionary(grouping: objects) { $0["round"] as? Int ?? 0 }
                #expect(byRound[0] == nil)
                for number in 1...3 {
                    let round = try #require(byRound[number])
                    #expect(round.compactMap { $0["name"] as? String } == ["beta", "gone"])
                    #expect(round[0]["up"] as? Bool == true && round[0]["capacity"] as? Int == 4)
                    #expect(round[1]["up"] as? Bool == false && round[1]["reason"] as? String == "refused")
                    #expect((round[0]["time"] as? String)?.hasSuffix("Z") == true)
                }
            }
        }

        /// A node that accepts and never answers makes each round last --timeout: the next
        /// round waits for it, whatever the interval.
        @Test func aSlowRoundDelaysTheNextOne() async throws {
            let silent = try Socket.listen(host: "127.0.0.1", port: 0)  // never accepts: connects, then silence
            defer { silent.close() }
            let port = try silent.localAddress().port
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-silent-\(UUID().uuidString).json")
            try #"{"nodes":[{"name":"mute","host":"127.0.0.1","port":\#(port)}]}"#.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let watch = try RunningProcess(["status", "--cluster", file.path, "--watch", "--interval", "0.1", "--timeout", "0.5"])
            let clock = ContinuousClock()
            try await watch.waitForLine { $0.hasPrefix("Every ") }
            let first = clock.now
            try await watch.waitForLines(3) { $0.hasPrefix("Every ") }
            #expect(clock.now - first >= .seconds(0.95))  // two rounds of at least 0.5 s each
            watch.send(SIGINT)
            let run = try await watch.finish(timeout: .seconds(20))
            #expect(run.status == 0)
            #expect(run.lines.filter { $0.hasPrefix("mute ") }.allSatisfy { $0.contains("down (timed out)") })
        }

        @Test func intervalIsCheckedAndNeedsWatch() async throws {
            let alone = try await runSkynet(["status", "--cluster", "/nonexistent.json", "--interval", "2"])
            #expect(alone.status == 2)
            #expect(alone.stderr.contains("option '--interval' needs --watch"))
            let tooShort = try await runSkynet(["status", "--watch", "--interval", "0.01"])
            #expect(tooShort.status == 2)
            #expect(tooShort.stderr.contains("option '--interval' wants a number of seconds in 0.1...3600, not '0.01'"))
            let help = try await runSkynet(["status", "--help"])
            #expect(help.stdout.contains("--watch") && help.stdout.contains("--interval S"))
        }

        /// The progress line's ETA under a pseudo-terminal: `--:--` at first, then a time.
        @Test func theProgressLineShowsAnETA() async throws {
            let run = try await scanInATerminal(columns: 200)
            #expect(run.status == 0)
            let lines = progressLines(run.stdout)
            #expect(lines.contains { $0.contains("ETA --:--") })
            #expect(lines.contains { $0.range(of: #"tasks completed  ETA 0:0\d  "#, options: .regularExpression) != nil }, "\(lines)")
        }

        /// A narrow terminal drops whole fields: the count and the ETA stay, nothing wraps.
        @Test func aNarrowTerminalKeepsTheCountAndTheETA() async throws {
            let run = try await scanInATerminal(columns: 50)
            #expect(run.status == 0)
            let lines = progressLines(run.stdout)
            #expect(!lines.isEmpty)
            for line in lines {
                #expect(line.count <= 49, "\(line)")
                #expect(line.contains("/40 tasks completed  ETA "), "\(line)")
            }
        }

        func scanInATerminal(columns: Int) async throws -> Finished {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-empty-\(UUID().uuidString).json")
            try #"{"nodes":[]}"#.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            // `script` runs the scan under a pseudo-terminal of `columns` and copies what it shows.
            let command = "stty cols \(columns) && \(skynetBinary.path) scan --total 40 --duration 0.2 --failing-every 0 "
                + "--capacity 4 --cluster \(file.path)"
            return try await runProgram("/usr/bin/script", ["-qfec", command, "/dev/null"], environment: ["NO_COLOR": nil])
        }

        /// Each drawing of the progress line (what follows an erase, up to the next line break).
        func progressLines(_ output: String) -> [String] {
            output.components(separatedBy: "\r\u{1B}[2K").dropFirst()
                .map { String($0.prefix { $0 != "\r" && $0 != "\n" }) }
                .filter { $0.contains("tasks completed") }
        }
    }
}
