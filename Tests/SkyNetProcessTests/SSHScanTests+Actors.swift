import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests.SSHScanTests {
    /// A program built on the library, given an ssh host that has neither skynet nor the
    /// program: it ships itself there, runs as its own node over the login, and its actors
    /// scan there; nothing of it is left running on the host.
    @Test func aProgramOfTheLibraryShipsItselfToAHostAndItsActorsRunThere() async throws {
        try await withSSHTestHosts(each: [Self.hostWithoutSkynet]) { hosts, client in
            let host = hosts[0]
            let example = ProcessTests.ActorExampleTests.example
            let run = try await runProgram(example, ["--ssh", "2/" + host.login, "--ssh-command", client.commandLine()], limit: .seconds(120))
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.lines.contains("[Cluster] Connected: \(host.login)"), "\(run.stdout)")
            #expect(run.lines.contains { $0.hasPrefix("Completed: ") && $0.hasSuffix(" by \(host.login)") }, "\(run.stdout)")
            #expect(run.lines.last?.hasPrefix("Finished 20 scans in ") == true, "\(run.stdout)")
            let build = try await SSHScanHarness.localSums([URL(fileURLWithPath: example).resolvingSymlinksInPath().path])
            let copy = "\(host.home)/.cache/skynet/skynet-\(build.prefix(64))"
            #expect(FileManager.default.isExecutableFile(atPath: copy), "no \(copy): \(run.stderr)")
            let left = await host.processesLeft(within: .seconds(3))
            #expect(left.isEmpty, "\(left.described)")
        }
    }
}
