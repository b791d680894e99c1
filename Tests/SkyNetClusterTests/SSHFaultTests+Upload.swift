import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// `--ship`'s upload when the coordinator is killed: ssh reads the build from a file, not from
/// a pipe that the coordinator's death would close, so only the group keeper ends it at once.
extension ProcessTests.SSHFaultTests {
    @Test func aCoordinatorKilledDuringAShipUploadLeavesNoSSHClientHere() async throws {
        try await withSSHTestHosts(each: [SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)]) { hosts, client in
            let host = hosts[0]
            // An ssh whose upload stalls after its first MiB, holding the session open for 30 s.
            let stalling = try await ProcessTests.SSHOptionTests.installScript(
                """
                #!/bin/sh
                for word in "$@"; do
                  case "$word" in
                    *mktemp*) { head -c 1048576; exec sleep 30; } | ssh "$@"; exit $?;;
                  esac
                done
                exec ssh "$@"
                """, at: client.folder + "/stalling-ssh")
            let command = ([stalling] + client.commandWords().dropFirst()).joined(separator: " ")
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
