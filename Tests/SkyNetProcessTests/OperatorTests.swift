import Foundation
@testable import SkyNet
@testable import SkyNetCluster
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// What people see: the live progress line, JSON Lines, `skynet status`, node logs, help.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct OperatorTests {
        let emptyCluster = #"{"nodes":[]}"#

        func withEmptyClusterFile<T>(_ body: (String) async throws -> T) async throws -> T {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-empty-\(UUID().uuidString).json")
            try emptyCluster.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            return try await body(file.path)
        }

        @Test func aTerminalShowsTheLiveProgressLine() async throws {
            try await withEmptyClusterFile { cluster in
                // `script` runs the scan under a pseudo-terminal and copies what it shows.
                let command = "\(skynetBinary.path) scan --total 12 --duration 0.3 --failing-every 0 --cluster \(cluster)"
                let run = try await runProgram("/usr/bin/script", ["-qfec", command, "/dev/null"], environment: ["NO_COLOR": nil])
                #expect(run.status == 0)
                #expect(run.stdout.contains(" scheduled  "))
                #expect(run.stdout.contains(" per sec.  "))
                #expect(run.stdout.contains("/12 tasks completed"))
                #expect(run.stdout.contains("\r\u{1B}[2K"))  // redrawn in place
                #expect(run.stdout.contains("Finished 12 scans"))
            }
        }

        @Test func noProgressLineWithoutATerminalOrWithNoColor() async throws {
            try await withEmptyClusterFile { cluster in
                let plain = try await runSkynet(["scan", "--total", "8", "--duration", "0.2", "--failing-every", "0", "--cluster", cluster])
                #expect(plain.status == 0)
                #expect(!plain.stderr.contains("scheduled"))
                #expect(!plain.stdout.contains("scheduled"))
                let command = "\(skynetBinary.path) scan --total 8 --duration 0.2 --failing-every 0 --cluster \(cluster)"
                let noColor = try await runProgram("/usr/bin/script", ["-qfec", command, "/dev/null"], environment: ["NO_COLOR": "1"])
                #expect(noColor.status == 0)
                #expect(!noColor.stdout.contains("scheduled"))
                let quiet = try await runProgram("/usr/bin/script", ["-qfec", command + " --quiet", "/dev/null"], environment: ["NO_COLOR": nil])
                #expect(!quiet.stdout.contains("scheduled"))
            }
        }

        @Test func jsonLinesAreValidAndTheSummaryMatchesThem() async throws {
            let run = try await runSkynet(["scan", "--total", "30", "--duration", "0.05", "--failing-every", "3", "--spawn", "1", "--json"])
            #expect(run.status == 0)
            let events = try run.lines.map { line -> [String: Any] in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            }
            #expect(events.allSatisfy { $0["event"] is String })
            let completed = events.filter { $0["event"] as? String == "completed" }
            let retries = events.filter { $0["event"] as? String == "retry" }
            let summary = try #require(events.last)
            #expect(summary["event"] as? String == "summary")
            #expect(summary["completed"] as? Int == completed.count)
            #expect(summary["total"] as? Int == 30)
            #expect(summary["reruns"] as? Int == retries.count)
            #expect(retries.count > 0)
            #expect(Set(completed.compactMap { $0["input"] as? Int }) == Set(0..<30))
            #expect(events.contains { $0["event"] as? String == "connected" && $0["system"] as? String == "node1" })
            let systems = try #require(summary["systems"] as? [String: [String: Any]])
            for (name, tally) in systems {
                #expect(tally["completed"] as? Int == completed.filter { $0["system"] as? String == name }.count)
            }
            let shares = systems.values.compactMap { $0["share"] as? Double }.reduce(0, +)
            #expect(abs(shares - 1) < 0.001)
        }

        /// A peer that connects while a very short scan ends must not print after the summary
        /// (it did in 5 of 40 runs before the links were stopped first).
        @Test func nothingFollowsTheSummary() async throws {
            try await withCluster(nodes: 1) { cluster in
                try cluster.writeClusterFile(extra: [.init(name: "gone", host: "127.0.0.1", port: try freePort())])
                for _ in 0..<20 {
                    let json = try await cluster.scan(["--total", "2", "--duration", "0", "--json"])
                    #expect(json.lines.last?.contains(#""event":"summary""#) == true)
                    let text = try await cluster.scan(["--total", "2", "--duration", "0"])
                    #expect(text.lines.last?.hasPrefix("Finished 2 scans") == true)
                }
            }
        }

        @Test func statusShowsAnUpNodeAndADownOneAndExitsOne() async throws {
            try await withCluster(nodes: 1) { cluster in
                let port = try freePort()
                try cluster.writeClusterFile(extra: [.init(name: "gone", host: "127.0.0.1", port: port)])
                let run = try await runSkynet(["status", "--cluster", cluster.clusterFile])
                #expect(run.status == 1)
                let lines = run.lines
                #expect(lines.first?.hasPrefix("name") == true)
                let beta = try #require(lines.first { $0.hasPrefix("beta") })
                #expect(beta.contains(" up "))
                #expect(beta.contains("0/4"))
                // Without a token the link is plain: the link column says so, after the round trip.
                #expect(lines.first.map(Self.columns)?.last == "link", "\(run.stdout)")
                let columns = Self.columns(beta)
                #expect(columns.count == 7 && columns[5].hasSuffix(" ms") && columns[6] == "plain", "\(run.stdout)")
                let gone = try #require(lines.first { $0.hasPrefix("gone") })
                #expect(gone.contains("down (refused)"))

                let json = try await runSkynet(["status", "--cluster", cluster.clusterFile, "--json"])
                #expect(json.status == 1)
                let objects = try json.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
                #expect(objects.count == 2)
                #expect(objects[0]["name"] as? String == "beta" && objects[0]["up"] as? Bool == true && objects[0]["link"] as? String == "plain")
                #expect(objects[1]["name"] as? String == "gone" && objects[1]["reason"] as? String == "refused")
            }
        }

        @Test func statusOfAllUpExitsZero() async throws {
            try await withCluster(nodes: 2) { cluster in
                let run = try await runSkynet(["status", "--cluster", cluster.clusterFile])
                #expect(run.status == 0)
                #expect(run.lines.filter { $0.contains(" up ") }.count == 2)
            }
        }

        /// The link column (the JSON's `link`) says how each link is kept secret: `encrypted` to
        /// a node with the token, asked with it; `plain` to a node without one, asked without
        /// (with a token, such a node is refused before anything is sent to it).
        @Test func statusSaysWhetherALinkIsEncryptedOrPlain() async throws {
            let scratch = try TokenScratch()
            let tokenFile = try scratch.tokenFile(TokenScratch.randomToken())
            let withToken = try await SkynetNode.start(name: "beta", ["--token-file", tokenFile])
            let withoutToken = try await SkynetNode.start(name: "gamma", [])
            let cases = [("beta", withToken.port, ["--token-file", tokenFile], "encrypted"), ("gamma", withoutToken.port, [], "plain")]
            for (name, port, token, link) in cases {
                let cluster = try scratch.clusterFile([(name, port)], named: "\(name).json")
                let table = try await runSkynet(["status", "--cluster", cluster] + token, limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
                #expect(table.status == 0, "\(name): \(table.stdout)\n\(table.stderr)")
                let rows = table.lines.map(Self.columns)
                #expect(rows.count == 2 && rows[0].last == "link", "\(table.stdout)")
                #expect(rows.count == 2 && rows[1].first == name && rows[1][2] == "up" && rows[1].last == link, "\(table.stdout)")

                let json = try await runSkynet(["status", "--cluster", cluster, "--json"] + token, limit: .seconds(20),
                                               environment: ["SKYNET_TOKEN": nil])
                #expect(json.status == 0, "\(name): \(json.stderr)")
                #expect(json.lines.count == 1 && json.stdout.contains(#""link":"\#(link)""#), "\(json.stdout)")
                let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
                #expect(object["up"] as? Bool == true && object["link"] as? String == link, "\(json.stdout)")
            }
            let log = try await withToken.stop()
            let connected = log.stderr.split(separator: "\n").filter { $0.hasPrefix("[Node] Connected: ") }
            #expect(connected.count == 2 && connected.allSatisfy { $0.hasSuffix(" (encrypted)") }, "one a probe: \(log.stderr)")
            _ = try await withoutToken.stop()
        }

        /// A row of `skynet status`'s table, split at its runs of two or more spaces.
        static func columns(_ row: String) -> [String] {
            row.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        }

        @Test func aVerboseNodeLogsEachTaskAndNeverTheToken() async throws {
            let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-node-\(UUID().uuidString).log")
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: logFile) }
            let secret = ["SKYNET_TOKEN": "sekrit-\(UUID().uuidString)"]
            let node = try await NodeProcess.start(
                executable: skynetBinary, name: "loud", arguments: ["--verbose", "--failing-every", "0"],
                stderr: try FileHandle(forWritingTo: logFile),
                environment: ProcessInfo.processInfo.environment.merging(secret) { $1 })
            do {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-loud-\(UUID().uuidString).json")
                try #"{"nodes":[{"name":"loud","host":"127.0.0.1","port":\#(node.port)}]}"#.write(to: file, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(at: file) }
                let run = try await runSkynet(["scan", "--total", "6", "--duration", "0.1", "--local-capacity", "0",
                                               "--cluster", file.path], environment: secret)
                #expect(run.status == 0)
            } catch {
                await node.stop()
                throw error
            }
            await node.stop()
            let log = try String(contentsOf: logFile, encoding: .utf8)
            #expect(log.contains("[Node] Connected: coordinator from 127.0.0.1:"))
            #expect(log.contains("[Node] Task 3 (scan) from coordinator: completed in "))
            #expect(log.contains("[Node] Disconnected: coordinator"))
            #expect(!log.contains(secret["SKYNET_TOKEN"]!))
        }

        @Test func everyCommandHasHelpWithExamples() async throws {
            for arguments in [["--help"], ["help", "scan"], ["node", "--help"], ["help", "status"]] {
                let run = try await runSkynet(arguments)
                #expect(run.status == 0)
                #expect(run.stdout.contains("examples:"))
            }
        }
    }
}
