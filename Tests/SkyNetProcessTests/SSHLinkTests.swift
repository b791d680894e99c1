import Foundation
@testable import SkyNet
@testable import SkyNetCluster
import SkyNetLocalHosts
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetSSH
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// A coordinator's links to ssh hosts, through real sshd and real `ssh`, each host running
    /// the built `skynet node --stdio`. Skipped where sshd, ssh or ssh-keygen is missing.
    @Suite(.serialized, .timeLimit(.minutes(3)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct SSHLinkTests {
        /// What the links reported, awaited without polling.
        final class Recorded: Sendable {
            private struct Waiter {
                let holds: @Sendable ([ClusterEvent]) -> Bool
                let signal: AsyncSignal<Void>
            }
            private let state = Locked<(events: [ClusterEvent], waiters: [Waiter])>(([], []))
            let hostLines = Locked<[String]>([])

            func append(_ event: ClusterEvent) {
                let ready = state.withLock { state -> [AsyncSignal<Void>] in
                    state.events.append(event)
                    let events = state.events
                    let ready = state.waiters.filter { $0.holds(events) }.map(\.signal)
                    state.waiters.removeAll { $0.holds(events) }
                    return ready
                }
                for signal in ready { signal.fulfil(()) }
            }

            var lines: [String] { state.withLock { $0.events.map(\.description) } }

            /// Returns once `count` events match; throws after `limit` (a hang guard).
            func wait(for count: Int = 1, upTo limit: Duration = .seconds(30),
                      _ matches: @escaping @Sendable (ClusterEvent) -> Bool) async throws {
                let holds: @Sendable ([ClusterEvent]) -> Bool = { $0.filter(matches).count >= count }
                let signal = AsyncSignal<Void>()
                let now = state.withLock { state -> Bool in
                    if holds(state.events) { return true }
                    state.waiters.append(Waiter(holds: holds, signal: signal))
                    return false
                }
                if now { return }
                try await withTimeout(limit) { await signal.value }
            }
        }

        /// Links to `hosts` (logins as given, each named h1, h2, …) with `client`'s key, a token
        /// the hosts must never be sent, and quick redials; stops them on every path.
        func withLinks<T>(_ logins: [String], client: SSHTestClient, key: String? = nil, ship: Bool = false,
                          _ body: (PeerLinks, Systems, Recorded) async throws -> T) async throws -> T {
            let nodes = try logins.enumerated().map { index, login in
                let parsed = try SSHLogin(parsing: login)
                return ClusterConfig.Node(name: "h\(index + 1)", ssh: parsed, capacity: parsed.slots)
            }
            let recorded = Recorded()
            // With a token, a link that sent it (a hello with a Noise handshake) would refuse the
            // stdio node's plain welcome (it does not know the token): every link that connects
            // proves that none was sent.
            var settings = PeerLinks.Settings(capacity: 1, timeout: .seconds(10), token: "not-for-ssh-hosts")
            settings.ssh = SSHSettings(command: SSHCommand(words: client.commandWords(key: key))) { line in
                recorded.hostLines.withLock { $0.append(line) }
            }
            settings.ssh.retryDelays = Backoff(first: .milliseconds(100), most: .milliseconds(500))
            settings.ssh.ship = ship
            settings.ssh.shipExecutable = skynetBinary.path
            let systems = Systems()
            let links = PeerLinks(cluster: ClusterConfig(nodes: nodes), systems: systems, settings: settings) { recorded.append($0) }
            do {
                let result = try await body(links, systems, recorded)
                await links.stop()
                return result
            } catch {
                await links.stop()
                throw error
            }
        }

        /// Whether the event is `name`'s link connecting, kept secret by ssh (not by the token).
        static func isConnected(_ name: String) -> @Sendable (ClusterEvent) -> Bool {
            { if case .connected(name, link: .ssh) = $0 { true } else { false } }
        }

        @Test func twoSSHHostsConnectWithTheSlotsOfTheirWelcome() async throws {
            try await withSSHTestHosts(count: 2, options: .init(skynet: skynetBinary.path)) { hosts, client in
                try await withLinks(["3/" + hosts[0].login, hosts[1].login], client: client) { _, systems, recorded in
                    try await recorded.wait(Self.isConnected("h1"))
                    try await recorded.wait(Self.isConnected("h2"))
                    let slots = Dictionary(uniqueKeysWithValues: await systems.slotUse.map { ($0.name, $0.capacity) })
                    // h1: its login's 3/ (sent to the node as --capacity 3); h2: the host's cores.
                    #expect(slots == ["h1": 3, "h2": CoreCount.online()])
                    #expect(recorded.lines == ["[Cluster] Connected: h1", "[Cluster] Connected: h2"] ||
                            recorded.lines == ["[Cluster] Connected: h2", "[Cluster] Connected: h1"], "\(recorded.lines)")
                    #expect(hosts[0].processes().count >= 1)
                }
                // Stopped: `stop()` returns once ssh is gone, which follows the node's end on
                // the host; the 1 s is the issue's bound for a node whose stdin closed.
                for host in hosts { #expect(await host.processesLeft(within: .seconds(1)) == []) }
            }
        }

        @Test func aWrongKeyIsReportedOnceWithSSHsLineAndTheCommandToCheckIt() async throws {
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                let stranger = try await client.makeKey(named: "stranger_key")
                try await withLinks([hosts[0].login], client: client, key: stranger) { links, _, recorded in
                    let failed = try await withTimeout(.seconds(30)) { await links.everySSHHostFailed.value }
                    #expect(failed == "h1 (ssh: Permission denied (publickey))")
                    let check = SSHCommand(words: client.commandWords(key: stranger)).checkHint(for: try SSHLogin(parsing: hosts[0].login))
                    #expect(check.hasSuffix("-p \(hosts[0].port) 127.0.0.1 true"))
                    #expect(recorded.lines == ["[Cluster] Unreachable: h1 (ssh: Permission denied (publickey)) — check the login with: \(check)"])
                }
            }
        }

        @Test func aHostWithoutSkynetIsReportedWithItsShellsLineAndTheFix() async throws {
            let options = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)
            try await withSSHTestHosts(count: 1, options: options) { hosts, client in
                try await withLinks([hosts[0].login], client: client) { links, _, recorded in
                    let failed = try await withTimeout(.seconds(30)) { await links.everySSHHostFailed.value }
                    #expect(failed.hasPrefix("h1 (") && failed.hasSuffix("skynet: not found)"), "\(failed)")
                    let lines = recorded.lines
                    #expect(lines.count == 1)
                    #expect(lines.first?.hasPrefix("[Cluster] Unreachable: h1 (") == true)
                    #expect(lines.first?.hasSuffix(
                        "skynet: not found) — install skynet on its PATH (swift build -c release --static-swift-stdlib), or give --ship") == true,
                        "\(lines)")
                }
            }
        }

        @Test func aLinkWhoseSSHDIsKilledEndsAndIsDialledAgainOnceSSHDIsBack() async throws {
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                let host = hosts[0]
                try await withLinks([host.login], client: client) { _, systems, recorded in
                    try await recorded.wait(Self.isConnected("h1"))
                    await host.killSSHD()
                    try await recorded.wait { if case .disconnected("h1", _) = $0 { true } else { false } }
                    #expect(await systems.names == [])
                    // The node saw its stdin end and left nothing behind.
                    #expect(await host.processesLeft(within: .seconds(3)) == [])
                    try await host.restartSSHD()
                    try await recorded.wait(for: 2, Self.isConnected("h1"))
                    #expect(await systems.names == ["h1"])
                    let disconnected = recorded.lines.first { $0.hasPrefix("[Cluster] Disconnected: h1") } ?? ""
                    #expect(disconnected.hasPrefix("[Cluster] Disconnected: h1 (ssh: "), "\(recorded.lines)")
                }
            }
        }

        @Test func aHostWithoutSkynetGetsThisBuildWithShipAndKeepsItForTheNextScan() async throws {
            let options = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)
            try await withSSHTestHosts(count: 1, options: options) { hosts, client in
                let host = hosts[0]
                let shipment = try await SSHShipment.of(executable: skynetBinary.path)
                let copy = "\(host.home)/.cache/skynet/skynet-\(shipment.sha256)"
                try await withLinks([host.login], client: client, ship: true) { _, systems, recorded in
                    try await recorded.wait(Self.isConnected("h1"))
                    #expect(await systems.names == ["h1"])
                    #expect(recorded.lines == ["[Cluster] Connected: h1"])
                }
                #expect(try SSHShipment.of(copy).sha256 == shipment.sha256)
                let inode = try FileManager.default.attributesOfItem(atPath: copy)[.systemFileNumber] as? Int
                // A second coordinator finds the copy: no upload (the file is the same one).
                try await withLinks([host.login], client: client, ship: true) { _, _, recorded in
                    try await recorded.wait(Self.isConnected("h1"))
                }
                #expect(try FileManager.default.attributesOfItem(atPath: copy)[.systemFileNumber] as? Int == inode)
            }
        }

        @Test func statusLogsInAndReportsTheSlotsOrSSHsReason() async throws {
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                // A capacity from cluster.json reaches the node as N/ does.
                let node = ClusterConfig.Node(name: "h1", ssh: try SSHLogin(parsing: hosts[0].login), capacity: 7)
                let up = await PeerStatus.probe(node, token: "not-for-ssh-hosts", timeout: .seconds(10),
                                                ssh: SSHSettings(command: SSHCommand(words: client.commandWords())))
                guard case .up(let pong, _, let link) = up.state else { Issue.record("\(up.state)"); return }
                #expect(link == .ssh)
                #expect(pong.capacity == 7)
                let stranger = try await client.makeKey(named: "stranger_key")
                let down = await PeerStatus.probe(node, token: nil, timeout: .seconds(10),
                                                  ssh: SSHSettings(command: SSHCommand(words: client.commandWords(key: stranger))))
                guard case .down(let reason) = down.state else { Issue.record("\(down.state)"); return }
                #expect(reason == "ssh: Permission denied (publickey)")
                #expect(await hosts[0].processesLeft(within: .seconds(3)) == [])
            }
        }

        /// A loopback login nobody listens on: a port that was free a moment ago.
        static func closedLogin() throws -> String {
            let socket = try Socket.listen(host: "127.0.0.1", port: 0)
            defer { socket.close() }
            return "127.0.0.1:\(try socket.localAddress().port)"
        }

        @Test func anUnknownHostKeyIsRefusedWithSSHsLine() async throws {
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                let recorded = Recorded()
                var settings = PeerLinks.Settings(timeout: .seconds(10))
                settings.ssh = SSHSettings(command: SSHCommand(words: client.commandWords(hostKeyChecking: "yes")))
                let node = ClusterConfig.Node(name: "h1", ssh: try SSHLogin(parsing: hosts[0].login))
                let links = PeerLinks(cluster: ClusterConfig(nodes: [node]), systems: Systems(), settings: settings) { recorded.append($0) }
                let failed = try? await withTimeout(.seconds(30)) { await links.everySSHHostFailed.value }
                await links.stop()
                #expect(failed == "h1 (ssh: Host key verification failed)")
                #expect(recorded.lines.first?.hasPrefix("[Cluster] Unreachable: h1 (ssh: Host key verification failed) — check the login with: ") == true,
                        "\(recorded.lines)")
            }
        }

        @Test func everyHostFailingIsSignalledWithEachOnesReasonButOneUpHostIsEnough() async throws {
            let options = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)
            try await withSSHTestHosts(count: 1, options: options) { hosts, client in
                let closed = try Self.closedLogin()
                try await withLinks([hosts[0].login, closed], client: client) { links, _, _ in
                    let failed = try await withTimeout(.seconds(30)) { await links.everySSHHostFailed.value }
                    #expect(failed.hasPrefix("h1 (") && failed.contains("skynet: not found), h2 (ssh: connect to host 127.0.0.1 port "), "\(failed)")
                    #expect(failed.hasSuffix(": Connection refused)"), "\(failed)")
                }
            }
            try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
                try await withLinks([try Self.closedLogin(), hosts[0].login], client: client) { links, _, recorded in
                    try await recorded.wait(Self.isConnected("h2"))
                    try await recorded.wait { if case .sshUnreachable("h1", _, _, _) = $0 { true } else { false } }
                    #expect(links.everySSHHostFailed.current == nil)
                }
            }
        }
    }
}
