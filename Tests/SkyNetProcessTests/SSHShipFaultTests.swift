import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// `--ship` against what can go wrong around the copy: the executable rebuilt under the
    /// running scan, a host that cannot keep the copy or cannot run it.
    @Suite(.serialized, .timeLimit(.minutes(2)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct SSHShipFaultTests {
        static let hostWithoutSkynet = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)

        /// `scan --ssh H,2/OK --ship` for 4 s: `OK` runs the tasks, so the scan goes on while `H`
        /// fails, long enough that a host failing with backoff (0.5 s, 1 s, 2 s, …) would be
        /// dialled (and shipped to) again and again.
        static func scan(_ host: SSHTestHost, beside other: SSHTestHost, client: SSHTestClient) -> [String] {
            ["scan", "--ssh", "\(host.login),2/\(other.login)", "--ship", "--ssh-command", client.commandLine(), "--local-capacity", "0",
             "--total", "16", "--duration", "0.5", "--failing-every", "0", "--quiet"]
        }

        /// The logins sshd accepted (each dial and each upload is one).
        static func logins(_ host: SSHTestHost) -> Int { host.sshdLog.filter { $0.hasPrefix("Accepted publickey") }.count }

        /// Runs the scan and checks that it found `host` unusable for good: every task done on
        /// the other, `host` reported once with `reason` and `fix` (sshd's quotes made plain),
        /// and logged in to only for the first dial, the one upload and the dial after it (a
        /// failure for good waits 30 s to try again).
        static func expectUnusableForGood(_ host: SSHTestHost, beside other: SSHTestHost, client: SSHTestClient,
                                          reason: String, fix: String) async throws {
            let run = try await runSkynet(scan(host, beside: other, client: client), limit: .seconds(60))
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(SSHScanHarness.completedBySystem(run.stderr) == [other.login: 16], "\(run.stderr)")
            let unreachable = run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") }
                .map { $0.replacingOccurrences(of: "‘", with: "'").replacingOccurrences(of: "’", with: "'") }
            #expect(unreachable == ["[Cluster] Unreachable: \(host.login) (\(reason)) — \(fix)"], "\(run.lines)")
            #expect(logins(host) <= 3, "\(host.sshdLog)")
        }

        /// A HOME on a noexec mount (a tmpfs mounted over it in a mount namespace of sshd's
        /// own): the copy is there but cannot be executed; shipped once, not over and over.
        @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), "needs root and /usr/bin/unshare (apt-get install util-linux)"))
        func aHomeMountedNoexecIsReportedForGoodAfterOneUpload() async throws {
            var noexec = Self.hostWithoutSkynet
            // sshd's arguments follow as $0 ($4: -f's config, in the host's folder).
            noexec.launcher = ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                               #"mount -t tmpfs -o noexec,mode=0755 skynet-noexec "${4%/sshd_config}/home" && exec "$0" "$@""#]
            try await withSSHTestHosts(each: [noexec, Self.hostWithoutSkynet]) { hosts, client in
                let sha256 = String(try await SSHScanHarness.localSums([skynetBinary.resolvingSymlinksInPath().path]).prefix(64))
                let copy = "\(hosts[0].home)/.cache/skynet/skynet-\(sha256)"
                try await Self.expectUnusableForGood(
                    hosts[0], beside: hosts[1], client: client,
                    reason: "skynet --ship: this build does not run on this host: the copy \(copy) is there but cannot be executed",
                    fix: "the host does not run programs from ~/.cache (mounted noexec?): install skynet on its PATH there and leave out --ship")
            }
        }

        /// `~/.cache` is a file: mkdir's line, and no upload after the first.
        @Test func aCacheFolderThatCannotBeMadeIsReportedForGoodInMkdirsWords() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet, Self.hostWithoutSkynet]) { hosts, client in
                try "a file".write(toFile: hosts[0].home + "/.cache", atomically: true, encoding: .utf8)
                try await Self.expectUnusableForGood(
                    hosts[0], beside: hosts[1], client: client,
                    reason: "skynet --ship: cannot keep the copy: mkdir: cannot create directory '\(hosts[0].home)/.cache': Not a directory",
                    fix: "--ship keeps its copy in ~/.cache/skynet on the host: make that a folder it can write")
            }
        }

        /// `~/.cache/skynet` a symbolic link to another folder: refused for good, and the
        /// folder it points to keeps its mode and gets no copy.
        @Test func aCacheFolderThatIsASymbolicLinkIsReportedForGoodAndWhatItPointsToIsLeftAlone() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet, Self.hostWithoutSkynet]) { hosts, client in
                let cache = hosts[0].home + "/.cache/skynet", elsewhere = hosts[0].folder + "/elsewhere"
                try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
                try FileManager.default.createDirectory(atPath: hosts[0].home + "/.cache", withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: cache, withDestinationPath: elsewhere)
                try await Self.expectUnusableForGood(
                    hosts[0], beside: hosts[1], client: client,
                    reason: "skynet --ship: cannot keep the copy in \(cache): it is a symbolic link",
                    fix: "--ship keeps its copy only in a folder of its own: remove the link ~/.cache/skynet on that host "
                        + "(what it points to is left as it is)")
                #expect(try FileManager.default.attributesOfItem(atPath: elsewhere)[.posixPermissions] as? Int == 0o755)
                #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == [])
            }
        }

        /// A cached copy replaced by a script that runs the real build after doing what it likes
        ///: its SHA-256 is checked before each use, so it never runs; the build is
        /// shipped again, and the coordinator says so once.
        @Test func aCachedCopyReplacedByAScriptIsNeverRunAndTheBuildIsShippedAgainSaidOnce() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet]) { hosts, client in
                let host = hosts[0]
                let (build, sha256, _, copy) = try await Self.cacheFolder(on: host, mode: 0o700)
                _ = try await SSHOptionTests.installScript("#!/bin/sh\ntouch \"$HOME/ran\"\nexec \(build) \"$@\"\n", at: copy)
                let script = String(try await SSHScanHarness.localSums([copy]).prefix(64))
                let run = try await runSkynet(["scan", "--ssh", host.login, "--ship", "--ssh-command", client.commandLine(),
                                               "--local-capacity", "0", "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
                #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                #expect(SSHScanHarness.completedBySystem(run.stderr) == [host.login: 4], "\(run.stderr)")
                #expect(!FileManager.default.fileExists(atPath: host.home + "/ran"), "the script ran: \(run.lines)")
                let said = run.lines.filter { $0.hasPrefix("[Cluster] Shipping again: ") }
                #expect(said == ["[Cluster] Shipping again: \(host.login) (skynet --ship: the copy \(copy) does not match this build: its SHA-256 is \(script))"],
                        "\(run.lines)")
                #expect(!run.lines.contains { $0.hasPrefix("[Cluster] Unreachable: ") }, "\(run.lines)")
                #expect(String(try await SSHScanHarness.localSums([copy]).prefix(64)) == sha256)
            }
        }

        /// Copies `source` to `destination` by `cp` (a file this process wrote could still be
        /// open in a child spawned meanwhile, and exec of it fail), with `mode`.
        static func copy(_ source: String, to destination: String, mode: mode_t) async throws {
            var options = ChildProcess.Options(arguments: [source, destination])
            options.searchPath = true
            let copy = try await ChildProcess.spawn("cp", options).exit.value
            guard copy.reason == .exited(0), chmod(destination, mode) == 0 else { throw ChildProcessError("cp \(source)", code: EIO) }
        }

        /// The built `skynet` and its SHA-256, and the host's cache folder (made with `mode`)
        /// with the name its copy has there.
        static func cacheFolder(on host: SSHTestHost, mode: mode_t) async throws -> (build: String, sha256: String, cache: String, copy: String) {
            let build = skynetBinary.resolvingSymlinksInPath().path
            let sha256 = String(try await SSHScanHarness.localSums([build]).prefix(64))
            let cache = host.home + "/.cache/skynet"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            try #require(chmod(cache, mode) == 0)
            return (build, sha256, cache, cache + "/skynet-" + sha256)
        }

        /// The scan's 4 tasks all done on `host` with `--ship`, which was not found unusable.
        static func scanOnly(_ host: SSHTestHost, client: SSHTestClient) async throws -> [String] {
            let run = try await runSkynet(["scan", "--ssh", host.login, "--ship", "--ssh-command", client.commandLine(),
                                           "--local-capacity", "0", "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(SSHScanHarness.completedBySystem(run.stderr) == [host.login: 4], "\(run.stderr)")
            #expect(!run.lines.contains { $0.hasPrefix("[Cluster] Unreachable: ") }, "\(run.lines)")
            return run.lines
        }

        /// The copy's name a symbolic link to a correct copy elsewhere, in a cache folder others
        /// may write to (in the attack the copy is theirs, to replace once its hash is checked):
        /// the link is removed unrun, the folder made 0700, and the build shipped again, said once.
        @Test func aCachedCopyThatIsASymbolicLinkIsShippedAgainSaidOnceAndItsFolderMadePrivate() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet]) { hosts, client in
                let host = hosts[0]
                let (build, sha256, cache, copy) = try await Self.cacheFolder(on: host, mode: 0o777)
                let theirs = host.folder + "/theirs"
                try await Self.copy(build, to: theirs, mode: 0o755)
                try FileManager.default.createSymbolicLink(atPath: copy, withDestinationPath: theirs)
                let lines = try await Self.scanOnly(host, client: client)
                let said = lines.filter { $0.hasPrefix("[Cluster] Shipping again: ") }
                #expect(said == ["[Cluster] Shipping again: \(host.login) (skynet --ship: the copy \(copy) is a symbolic link)"], "\(lines)")
                #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: copy)) == nil, "still a link")
                #expect(String(try await SSHScanHarness.localSums([copy]).prefix(64)) == sha256)
                #expect(try FileManager.default.attributesOfItem(atPath: cache)[.posixPermissions] as? Int == 0o700)
            }
        }

        /// A correct copy that lost its execute bit (0600) is made executable and run: not taken
        /// for a noexec home, not shipped again.
        @Test func anIntactCopyWithoutItsExecuteBitIsMadeExecutableAndRun() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet]) { hosts, client in
                let host = hosts[0]
                let (build, _, _, copy) = try await Self.cacheFolder(on: host, mode: 0o700)
                try await Self.copy(build, to: copy, mode: 0o600)
                let lines = try await Self.scanOnly(host, client: client)
                #expect(!lines.contains { $0.hasPrefix("[Cluster] Shipping again: ") }, "\(lines)")
                #expect(Self.logins(host) == 1, "\(host.sshdLog)")
                #expect(try FileManager.default.attributesOfItem(atPath: copy)[.posixPermissions] as? Int == 0o700)
            }
        }

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
