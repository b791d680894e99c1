import SkyNetRuntime
import SkyNetTransport

/// How a coordinator reaches its ssh hosts: the same for every host of a scan.
public struct SSHSettings: Sendable {
    /// The ssh program and options (`--ssh-command`).
    public var command: SSHCommand
    /// The node's arguments (`--job NAME=COMMAND`, `--max-output N`, …), sent in `--stdio-args`.
    public var nodeArguments: [String]
    /// Copy this build to hosts that lack it (`--ship`).
    public var ship: Bool
    /// Backoff between attempts to reach a host: each costs a login, which sshd logs (and
    /// fail2ban counts), so slower than over TCP.
    public var retryDelays: (first: Duration, most: Duration) = (.milliseconds(500), .seconds(10))
    /// Where the hosts' stderr lines go (`[gpu1] …`), already rate-limited.
    public var hostLog: @Sendable (String) -> Void

    public init(command: SSHCommand = .standard, nodeArguments: [String] = [], ship: Bool = false,
                hostLog: @escaping @Sendable (String) -> Void = { _ in }) {
        self.command = command
        self.nodeArguments = nodeArguments
        self.ship = ship
        self.hostLog = hostLog
    }
}

/// A node reached by logging in to its host with ssh and running `skynet node --stdio` there.
public struct SSHDialer: PeerDialer {
    public let name: String
    public let login: SSHLogin
    public let settings: SSHSettings

    public init(name: String, login: SSHLogin, settings: SSHSettings) {
        self.name = name
        self.login = login
        self.settings = settings
    }

    public var address: String { "ssh \(login)" }
    /// The login is the authority: the cluster token never goes to an ssh host.
    public var sendsToken: Bool { false }

    /// The node's arguments: the scan's, and `--capacity N` for a login's `N/`.
    var nodeArguments: [String] {
        settings.nodeArguments + (login.slots.map { ["--capacity", String($0)] } ?? [])
    }

    public func dial(timeout: Duration) async throws -> DialedLink {
        let remote = try RemoteCommand.plain(arguments: nodeArguments)
        let channel = try await SSHChannel.open(name: name, login: login, command: settings.command, remote: remote,
                                                timeout: timeout, hostLog: settings.hostLog)
        // The login and the node's start come before the welcome.
        return DialedLink(connection: channel.connection, welcomeBound: max(timeout * 2, .seconds(5)),
                          explain: { await channel.failure(after: $0) })
    }
}
