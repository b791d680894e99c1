import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension NodeStdioProcessTests {
    /// A usage error of `skynet node --stdio …` shows the --stdio form: its options, without
    /// the --port the error may just have refused. Without --stdio the usage is the TCP form.
    @Test(arguments: [["--port", "9001"], ["--capacity", "0"], ["--stdio-args", "zz"]])
    func aUsageErrorUnderStdioShowsTheStdioUsage(arguments: [String]) async throws {
        let run = try await runSkynet(["node", "--stdio"] + arguments, limit: .seconds(30))
        #expect(run.status == 2)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count > 2 && lines[1].hasPrefix("usage: skynet node --stdio [--name NAME]"), "\(run.stderr)")
        #expect(!run.stderr.contains("--port PORT") && !run.stderr.contains("[--host") && !run.stderr.contains("--token-file"), "\(run.stderr)")
        #expect(run.stderr.contains("[--job NAME=COMMAND ...]") && run.stderr.contains("[--stdio-args HEX]"), "\(run.stderr)")
        #expect(lines.last == "Run 'skynet help node' for more.")

        let tcp = try await runSkynet(["node", "--port", "0", "--capacity", "0"], limit: .seconds(30))
        #expect(tcp.status == 2)
        #expect(tcp.stderr.contains("usage: skynet node --port PORT"), "\(tcp.stderr)")
    }
}
