import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// A host whose `skynet` starts but never says a protocol line: it stays silent, or its first
/// line is over the protocol's limit. The login worked, so the report must say what the node
/// did, not blame ssh (the link's own stop of ssh made it exit 255, which read as a failed
/// login with a check command that succeeds).
extension ProcessTests.SSHFaultTests {
    /// Runs a scan over one host whose `skynet` is `script` (`--timeout 1`: the welcome may
    /// take 5 s); returns its `[Cluster] Unreachable:` lines.
    static func unreachableLines(ofHostRunning script: String) async throws -> [String] {
        try await SSHScanHarness.withFolder { folder in
            let skynet = try await ProcessTests.SSHOptionTests.installScript(script, at: folder + "/skynet")
            return try await withSSHTestHosts(each: [SSHTestHost.Options(skynet: skynet)]) { hosts, client in
                let host = hosts[0]
                let run = try await runSkynet(["scan", "--ssh", host.login, "--ssh-command", client.commandLine(), "--timeout", "1",
                                               "--local-capacity", "0", "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
                #expect(run.status == 2, "\(run.stdout)\n\(run.stderr)")
                let left = await host.processesLeft(within: .seconds(3))
                #expect(left.isEmpty, "\(left.described)")
                return run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") }
                    .map { $0.replacingOccurrences(of: host.login, with: "HOST") }
            }
        }
    }

    @Test func aHostWhoseSkynetNeverAnswersIsReportedAsNoAnswerNotAsSSHsFailure() async throws {
        let lines = try await Self.unreachableLines(ofHostRunning: "#!/bin/sh\nexec cat >/dev/null\n")
        #expect(lines == ["[Cluster] Unreachable: HOST (no answer from skynet node within 5 s)"])
    }

    @Test func aHostWhoseFirstLineIsOverTheLimitIsReportedWithTheLimitNotAsSSHsFailure() async throws {
        let lines = try await Self.unreachableLines(
            ofHostRunning: "#!/bin/sh\nhead -c 1100000 /dev/zero | tr '\\0' x; echo; exec cat >/dev/null\n")
        #expect(lines == ["[Cluster] Unreachable: HOST (the first line from skynet node was over 1048576 bytes) — only protocol "
                          + "lines may come on its stdout: check the skynet on that host (skynet --version there) and that the login's "
                          + "start-up files print nothing"])
    }
}
