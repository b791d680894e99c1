import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
@testable import SkyNetTestSupport
import Testing

/// deploy/skynet-node.service, as the repository ships it.
let unitFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("deploy/skynet-node.service")
let systemdAnalyze = "/usr/bin/systemd-analyze"

extension ProcessTests {
    /// The systemd unit: Debian's systemd accepts it, scores its hardening OK, it is a notify
    /// service that drains before it can be killed, and its ExecStart runs as systemd would.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct SystemdUnitTests {
        private var text: String { get throws { try Self.text } }
        static var text: String { get throws { try String(contentsOf: unitFile, encoding: .utf8) } }
        private func settings() throws -> [String: [String]] { try Self.settings() }

        /// The `[Service]` settings, each name's values in order (a name may repeat).
        static func settings() throws -> [String: [String]] {
            var found: [String: [String]] = [:]
            for line in try Self.text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("[") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                found[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
            }
            return found
        }

        /// The ExecStart's words after the program.
        static func execStartArguments() throws -> [String] {
            let line = try #require(try settings()["ExecStart"]?.first)
            return line.split(separator: " ").dropFirst().map(String.init)
        }
        private func execStartArguments() throws -> [String] { try Self.execStartArguments() }

        /// The unit with ExecStart's program made the built `skynet` (verify wants it to exist),
        /// written as `skynet-node.service` in `folder`.
        private func unitCopy(in folder: URL) throws -> String {
            let copy = try text.replacingOccurrences(of: "ExecStart=/usr/local/bin/skynet ", with: "ExecStart=\(skynetBinary.path) ")
            #expect(copy != (try text))
            let path = folder.appendingPathComponent("skynet-node.service").path
            try copy.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze), "needs systemd-analyze (apt-get install systemd)"))
        func systemdAnalyzeVerifiesTheUnit() async throws {
            let scratch = try TokenScratch()
            let unit = try unitCopy(in: scratch.folder)
            let run = try await ToolRun.run(systemdAnalyze, ["verify", unit], limit: .seconds(60))
            #expect(run.exit.status == 0, "\(run.stderr)")
            #expect(!run.stderr.contains("skynet-node.service"), "\(run.stderr)")
        }

        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze), "needs systemd-analyze (apt-get install systemd)"))
        func systemdAnalyzeScoresItsHardeningOK() async throws {
            let scratch = try TokenScratch()
            let unit = try unitCopy(in: scratch.folder)
            let run = try await ToolRun.run(systemdAnalyze, ["security", "--offline=yes", "--threshold=30", unit], limit: .seconds(60))
            #expect(run.exit.status == 0, "\(run.stdout)\n\(run.stderr)")
            let overall = try #require(run.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") })
            let score = try #require(overall.split(separator: " ").compactMap { Double($0) }.first)
            #expect(score <= 3.0, "\(overall)")
        }

        @Test func theUnitIsANotifyServiceThatDrainsBeforeItCanBeKilled() throws {
            let settings = try settings()
            #expect(settings["Type"] == ["notify"])
            #expect(settings["NotifyAccess"] == ["main"])
            #expect(settings["KillMode"] == ["mixed"])
            #expect(settings["DynamicUser"] == ["yes"])
            #expect(settings["LoadCredential"] == ["token:/etc/skynet/token"])
            #expect(settings["ProtectSystem"] == ["strict"])
            #expect(settings["NoNewPrivileges"] == ["yes"])
            #expect(settings["RestrictAddressFamilies"]?.first?.split(separator: " ").contains("AF_UNIX") == true)
            #expect(settings["WantedBy"] == ["multi-user.target"])
            let arguments = try execStartArguments()
            #expect(arguments.first == "node")
            let tokenFile = try #require(arguments.firstIndex(of: "--token-file"))
            #expect(arguments[tokenFile + 1] == "%d/token")
            #expect(!arguments.contains("SKYNET_TOKEN") && settings["Environment"] == nil)
            let drain = try #require(arguments.firstIndex(of: "--drain-timeout").flatMap { Double(arguments[$0 + 1]) })
            let stop = try #require(settings["TimeoutStopSec"]?.first.flatMap(Double.init))
            #expect(stop > drain + 10, "TimeoutStopSec \(stop) leaves the drain of \(drain) s and the jobs' kill grace too little")
            let watchdog = try #require(settings["WatchdogSec"]?.first.flatMap(Double.init))
            #expect(watchdog >= 10)
        }
    }
}
