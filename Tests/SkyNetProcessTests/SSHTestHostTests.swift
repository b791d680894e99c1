import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// The real-sshd harness the SSH suites stand on: logins with the right and a wrong key,
    /// the sessions' environment and marker, cleanup, two hosts at once, sshd killed and
    /// restarted. Skipped where sshd, ssh or ssh-keygen is missing (CI installs them).
    @Suite(.serialized, .timeLimit(.minutes(3)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct SSHTestHostTests {
        /// The name ssh logs in as (ours: the client names no user).
        static let userName: String = getpwuid(geteuid()).flatMap { String(validatingCString: $0.pointee.pw_name) } ?? "?"

        @Test func aLoginWithTheAuthorizedKeyRunsTheCommandWithTheHostsEnvironment() async throws {
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                let host = hosts[0]
                let plain = try await client.run(on: host, "true")
                #expect(plain.exit.reason == .exited(0), "\(plain.stderr)")
                let shown = try await client.run(on: host, #"printf '%s\n' "$PATH" "$HOME" "$SKYNET_TEST_HOST"; command -v skynet"#)
                #expect(shown.exit.succeeded, "\(shown.stderr)")
                #expect(shown.stdout.split(separator: "\n").map(String.init) == [
                    "\(host.folder)/bin:/usr/bin:/bin", host.home, host.marker, "\(host.folder)/bin/skynet",
                ])
            }
        }

        @Test func aWrongKeyIsRefusedWithSSHsPermissionDeniedLine() async throws {
            try await withSSHTestHosts(count: 1) { hosts, client in
                let host = hosts[0]
                let stranger = try await client.makeKey(named: "stranger_key")
                let refused = try await client.run(on: host, "true", key: stranger)
                #expect(refused.exit.reason == .exited(255))
                #expect(refused.lastErrorLine == "\(Self.userName)@127.0.0.1: Permission denied (publickey).", "\(refused.stderr)")
                // The refusal costs the source nothing (no penalty on OpenSSH 9.8 and later).
                let admitted = try await client.run(on: host, "true")
                #expect(admitted.exit.succeeded, "\(admitted.stderr)")
            }
        }

        /// The host the "skynet is missing" tests use: its login shell's own words for it.
        @Test func aHostWithoutSkynetOnItsPathSaysSoWithStatus127() async throws {
            let options = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)
            try await withSSHTestHosts(count: 1, options: options) { hosts, client in
                let missing = try await client.run(on: hosts[0], "exec skynet node --stdio")
                #expect(missing.exit.reason == .exited(127))
                #expect(missing.lastErrorLine?.hasSuffix("skynet: not found") == true, "\(missing.stderr)")
            }
        }

        @Test func aPortSomeoneHoldsIsReportedInSSHDsWordsAndLeavesNoFolder() async throws {
            let taken = try Socket.listen(host: "127.0.0.1", port: 0)
            defer { taken.close() }
            var options = SSHTestHost.Options()
            options.port = try taken.localAddress().port
            let before = try Self.hostFolders()
            do {
                let host = try await SSHTestHost.start(options: options)
                await host.stop()
                Issue.record("sshd started on a port someone holds")
            } catch let error as SSHTestHostError {
                #expect(error.addressInUse, "\(error)")
                #expect(error.description.contains("Address already in use"), "\(error)")
            }
            #expect(try Self.hostFolders() == before)
        }

        /// The test hosts' folders in the temporary folder.
        static func hostFolders() throws -> Set<String> {
            let names = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)
            return Set(names.filter { $0.hasPrefix("skynet-ssh-") })
        }

        /// An ssh session to `host` running `remote`, which prints two pids first: the session,
        /// those pids (as many as were numbers), and its lines so far for a failing test's message.
        static func session(on host: SSHTestHost, running remote: String) async throws -> (ChildProcess, [Int32], String) {
            var options = ChildProcess.Options(arguments: host.client.arguments(to: host, remote: remote))
            options.searchPath = true
            options.stdout = .lines()
            options.stderr = .lines()
            let ssh = try await onOwnThread(named: "ssh-session") { [options] in try ChildProcess.spawn("ssh", options) }
            guard let log = ssh.stdoutLines else { return (ssh, [], "no stdout") }
            // A counting predicate: the log asks it once per line.
            let seen = Locked(0)
            do {
                _ = try await withTimeout(.seconds(15)) { await log.first { _ in seen.withLock { $0 += 1; return $0 == 2 } } }
            } catch {
                await ssh.stop(grace: .zero)
                throw error
            }
            return (ssh, log.lines.prefix(2).compactMap { Int32($0) }, "\(log.lines) \(ssh.stderrLines?.lines ?? [])")
        }

        @Test func everyProcessOfASessionCarriesTheMarkerAndStopLeavesNone() async throws {
            let host = try await SSHTestHost.start()
            var session: ChildProcess?
            do {
                // A job left to init (the subshell ends at once), then the shell itself.
                let remote = "( exec sleep 120 & echo $! ); echo $$; exec sleep 121"
                let (ssh, started, log) = try await Self.session(on: host, running: remote)
                session = ssh
                #expect(started.count == 2, "\(log)")
                let marked = host.processes()
                #expect(Set(started).isSubset(of: Set(marked)), "marked \(marked), started \(started)")
                let orphan = try #require(started.first.flatMap(HostProcesses.read))
                // Left to init (or a subreaper), no longer the shell's: only its marker finds it.
                #expect(orphan.parent != started.last, "\(orphan)")

                await host.stop()
                #expect(HostProcesses.carrying(host.markerEntry).isEmpty)
                #expect(started.allSatisfy { HostProcesses.read($0) == nil || HostProcesses.read($0)?.state == "Z" })
                #expect(!FileManager.default.fileExists(atPath: host.folder))
                // The channel closed under ssh: it ends by itself.
                let ended = try await withTimeout(.seconds(5)) { await ssh.exit.value }
                #expect(!ended.succeeded)
            } catch {
                await session?.stop(grace: .zero)
                await host.stop()
                throw error
            }
            await session?.stop(grace: .zero)
        }

        @Test func twoHostsRunAtOnceOnTheirOwnPortsWithTheirOwnMarkers() async throws {
            try await withSSHTestHosts(count: 2) { hosts, client in
                #expect(hosts[0].port != hosts[1].port)
                #expect(hosts[0].marker != hosts[1].marker)
                async let first = client.run(on: hosts[0], "echo $SKYNET_TEST_HOST")
                async let second = client.run(on: hosts[1], "echo $SKYNET_TEST_HOST")
                let (one, two) = try await (first, second)
                #expect(one.stdout == hosts[0].marker + "\n", "\(one.stderr)")
                #expect(two.stdout == hosts[1].marker + "\n", "\(two.stderr)")
                // One known_hosts learnt both keys, each under its own port.
                for host in hosts {
                    let again = try await client.run(on: host, "true", hostKeyChecking: "yes")
                    #expect(again.exit.succeeded, "\(again.stderr)")
                }
            }
        }

        @Test func aKilledSSHDEndsItsSessionsAndRestartsOnTheSamePort() async throws {
            try await withSSHTestHosts(count: 1) { hosts, client in
                let host = hosts[0]
                // `cat` reads the channel: it ends when the channel does.
                var options = ChildProcess.Options(arguments: client.arguments(to: host, remote: "echo up; exec cat"))
                options.searchPath = true
                options.stdin = .pipe
                options.stdout = .lines()
                let ssh = try await onOwnThread(named: "ssh-session") { [options] in try ChildProcess.spawn("ssh", options) }
                do {
                    try await ssh.waitForLine(timeout: .seconds(15)) { $0 == "up" }
                    // The shell printed `up` and is becoming `cat`: across its exec /proc may show
                    // none for a moment under load, so the one session is awaited.
                    #expect(await host.waitUntil(within: .seconds(10)) { $0.processes().count == 1 })
                    let listener = try #require(host.sshdPID)
                    let sessionSSHDs = HostProcesses.descendants(of: listener).filter { $0.name == "sshd" }.map(\.pid)
                    #expect(!sessionSSHDs.isEmpty)
                    await host.killSSHD()
                    #expect(host.sshdPID == nil)
                    #expect(sessionSSHDs.allSatisfy { HostProcesses.read($0).map { $0.state == "Z" } ?? true })
                    let ended = try await withTimeout(.seconds(5)) { await ssh.exit.value }
                    #expect(ended.reason == .exited(255))
                    #expect(await host.processesLeft(within: .seconds(3)).isEmpty)
                    try await host.restartSSHD()
                    let again = try await client.run(on: host, "true", hostKeyChecking: "yes")
                    #expect(again.exit.succeeded, "\(again.stderr)")
                } catch {
                    await ssh.stop(grace: .zero)
                    throw error
                }
                await ssh.stop(grace: .zero)
            }
        }

        /// A host on a network of its own (10.213.K.2, not loopback: the link is what is cut).
        @Test(.enabled(if: NetworkNamespace.isAvailable, "needs root and ip for a network namespace (apt-get install iproute2)"))
        func aHostInANamespaceIsReachedOverItsLinkUntilTheLinkIsCut() async throws {
            let (name, link) = try await withNetworkNamespace { namespace in
                let inside = try await withSSHTestHosts(count: 1, options: .inside(namespace)) { hosts, client in
                    let host = hosts[0]
                    #expect(host.login == "\(namespace.insideAddress):22")
                    let reached = try await client.run(on: host, "echo $SKYNET_TEST_HOST")
                    #expect(reached.stdout == host.marker + "\n", "\(reached.stderr)")
                    let sshd = try #require(host.sshdPID)
                    let insidePIDs = await namespace.processes()
                    #expect(insidePIDs.contains(sshd), "sshd \(sshd) not among \(insidePIDs)")
                    try await namespace.cut()
                    let cutOff = try await ToolRun.run(
                        "ssh", ["-o", "ConnectTimeout=2"] + client.arguments(to: host, remote: "true"), limit: .seconds(20))
                    #expect(cutOff.exit.reason == .exited(255))
                    #expect(cutOff.lastErrorLine?.contains("timed out") == true, "\(cutOff.stderr)")
                    try await namespace.mend()
                    let mended = try await client.run(on: host, "true", hostKeyChecking: "yes")
                    #expect(mended.exit.succeeded, "\(mended.stderr)")
                    return insidePIDs
                }
                #expect(await HostProcesses.awaitGone(inside, within: .seconds(3)).isEmpty)
                return (namespace.name, namespace.link)
            }
            let namespaces = try await ToolRun.run("ip", ["netns", "list"])
            #expect(!namespaces.stdout.contains(name))
            let links = try await ToolRun.run("ip", ["-o", "link", "show"])
            #expect(!links.stdout.contains(link))
        }
    }
}
