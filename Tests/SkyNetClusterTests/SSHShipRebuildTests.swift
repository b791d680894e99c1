import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// `--ship` while the executable is rebuilt under the running scan: what it ships is the
    /// build that runs, read through /proc, not the file now at its path (or none).
    @Suite(.serialized, .timeLimit(.minutes(2)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (Debian: openssh-server)"))
    struct SSHShipRebuildTests {
        @Test func aScanWhoseExecutableIsReplacedShipsTheBuildThatRuns() async throws {
            try await withSSHTestHosts(each: [SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)]) { hosts, client in
                let host = hosts[0]
                try await SSHScanHarness.withFolder { folder in
                    let executable = folder + "/skynet"
                    try FileManager.default.copyItem(atPath: skynetBinary.resolvingSymlinksInPath().path, toPath: executable)
                    let sha256 = String(try await SSHScanHarness.localSums([executable]).prefix(64))
                    var options = ChildProcess.Options(
                        arguments: ["scan", "--ssh", host.login, "--ship", "--ssh-command", client.commandLine(), "--local-capacity", "0",
                                    "--total", "4", "--duration", "0.1", "--quiet"],
                        environment: ProcessInfo.processInfo.environment)
                    options.stdout = .lines(keep: 10_000)
                    options.stderr = .lines(keep: 10_000)
                    options.ownProcessGroup = true
                    let scan = try ChildProcess.spawn(executable, options)
                    // The rebuild: a new file takes the path (the linker never writes into a running one).
                    try FileManager.default.removeItem(atPath: executable)
                    try "#!/bin/sh\nexit 99\n".write(toFile: executable, atomically: false, encoding: .utf8)
                    let exit: ChildExit
                    do {
                        exit = try await withTimeout(.seconds(60)) { await scan.exit.value }
                    } catch {
                        await scan.stop(grace: .zero)
                        throw error
                    }
                    await scan.stderrLines?.closed()
                    let stderr = (scan.stderrLines?.lines ?? []).joined(separator: "\n")
                    #expect(exit.succeeded, "\(exit): \(stderr)")
                    #expect(!stderr.contains("Unreachable"), "\(stderr)")
                    let copy = "\(host.home)/.cache/skynet/skynet-\(sha256)"
                    #expect(FileManager.default.isExecutableFile(atPath: copy), "no \(copy): \(stderr)")
                    let left = await host.processesLeft(within: .seconds(3))
                    #expect(left.isEmpty, "\(left.described)")
                }
            }
        }
    }
}
