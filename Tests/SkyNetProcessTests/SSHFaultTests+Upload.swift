import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// `--ship`'s upload when the coordinator is killed: ssh reads the build from a file, not from
/// a pipe that the coordinator's death would close, so only the group keeper ends it at once.
extension ProcessTests.SSHFaultTests {
    @Test func aCoordinatorKilledDuringAShipUploadLeavesNoSSHClientHere() async throws {
        try await withSSHTestHosts(each: [SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)]) { hosts, client in
            let host = hosts[0]
            let command = try await Self.stallingUploadCommand(client)
            let cache = host.home + "/.cache/skynet"
            let uploading = { () -> Bool in
                ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).contains { $0.hasPrefix(".skynet-") }
            }
            try await withCoordinator(["scan", "--ssh", host.login, "--ship", "--ssh-command", command, "--local-capacity", "0",
                                       "--total", "4", "--duration", "0.1", "--quiet"]) { scan in
                let began = await host.waitUntil(within: .seconds(30)) { _ in uploading() }
                try #require(began, "no upload began: \(scan.process.lines)")
                #expect(!scan.processes().isEmpty)  // the upload's ssh (and the wrapper) run here
                scan.process.send(SIGKILL)
                // Before the keeper ended them with us, they waited the 30 s out.
                let here = await scan.processesLeft(within: .seconds(3))
                #expect(here.isEmpty, "left by the coordinator here: \(here.described)")
            }
        }
    }
}
