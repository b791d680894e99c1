import SkyNetLink
import SkyNetRuntime
import SkyNetTransport

/// How a coordinator reaches its ssh hosts: the same for every host of a scan.
package struct SSHSettings: Sendable {
    /// The ssh program and options (`--ssh-command`).
    package var command: SSHCommand
    /// The node's arguments (`--job NAME=COMMAND`, `--max-output N`, …), sent in `--stdio-args`.
    package var nodeArguments: [String]
    /// Copy this build to hosts that lack it (`--ship`).
    package var ship: Bool
    /// The executable `--ship` copies; nil: this one (tests ship the built `skynet`).
    package var shipExecutable: String?
    /// Backoff between attempts to reach a host: each costs a login, which sshd logs (and
    /// fail2ban counts), so slower than over TCP.
    package var retryDelays = Backoff(first: .milliseconds(500), most: .seconds(10))
    /// Where the hosts' stderr lines go (`[gpu1] …`), already rate-limited.
    package var hostLog: @Sendable (String) -> Void

    package init(command: SSHCommand = .standard, nodeArguments: [String] = [], ship: Bool = false,
                hostLog: @escaping @Sendable (String) -> Void = { _ in }) {
        self.command = command
        self.nodeArguments = nodeArguments
        self.ship = ship
        self.hostLog = hostLog
    }
}

/// A node reached by logging in to its host with ssh and running `skynet node --stdio` there.
package struct SSHDialer: PeerDialer {
    package let name: String
    package let login: SSHLogin
    /// The node's slots (`N/`, or cluster.json's `capacity`); nil: the host's cores.
    package let capacity: Int?
    package let settings: SSHSettings

    package init(name: String, login: SSHLogin, capacity: Int? = nil, settings: SSHSettings) {
        self.name = name
        self.login = login
        self.capacity = capacity ?? login.slots
        self.settings = settings
    }

    package var address: String { "ssh \(login)" }
    /// The login is the authority: the cluster token never goes to an ssh host.
    package var sendsToken: Bool { false }

    /// The node's arguments: the scan's, and `--capacity N` for a login's `N/` (or the
    /// node's capacity in cluster.json), which may be more than the host's cores.
    var nodeArguments: [String] {
        settings.nodeArguments + (capacity.flatMap { $0 > 0 ? ["--capacity", String($0)] : nil } ?? [])
    }

    package func dial(timeout: Duration) async throws -> DialedLink {
        let remote = settings.ship ? try RemoteCommand.shipped(try await shipment(), arguments: nodeArguments)
                                   : try RemoteCommand.plain(arguments: nodeArguments)
        let channel = try await SSHChannel.open(name: name, login: login, command: settings.command, remote: remote,
                                                timeout: timeout, hostLog: settings.hostLog)
        // The login and the node's start come before the welcome.
        let bound = max(timeout * 2, .seconds(5))
        return DialedLink(connection: channel.connection, welcomeBound: bound,
                          explain: { await channel.failure(after: $0, answerBound: bound) }, finish: { await channel.close() },
                          welcomed: { channel.startForwarding() })
    }

    private func shipment() async throws -> SSHShipment {
        if let path = settings.shipExecutable { return try await SSHShipment.of(executable: path) }
        return try await SSHShipment.local()
    }

    /// `--ship`: copies this executable to the host's `~/.cache/skynet/skynet-<sha256>` over one
    /// more login (ssh reads the file itself: nothing passes through this process), where its
    /// hash is checked before it takes its name. Throws an `SSHFailure` in ssh's words: a cache
    /// folder that cannot be made is for good (`.cannotShip`), other failures are retried.
    package func ship(timeout: Duration) async throws {
        let shipment = try await shipment()
        var options = ChildProcess.Options(
            arguments: Array(settings.command.arguments(to: login, remote: RemoteCommand.upload(shipment), connectTimeout: timeout).dropFirst()),
            environment: SSHChannel.environment())
        options.stdin = .file(shipment.path)
        options.stderr = .lines(maxLength: SSHChannel.maxStderrLine, keep: StderrTail.keep)
        options.searchPath = true
        options.ownProcessGroup = true
        let program = settings.command.words[0]
        let child = try await onBlockingPool { [options] in try ChildProcess.spawn(program, options) }
        let exit = child.exit
        guard let ended = try? await withTimeout(shipment.uploadBound, { await exit.value }) else {
            await child.stop(grace: .milliseconds(500))
            throw SSHFailure(kind: .shipFailed, reason: "the upload took longer than \(Int(shipment.uploadBound.seconds)) s", fix: "retrying")
        }
        if ended.succeeded { return }
        await child.stderrLines?.closed()
        let lines = (child.stderrLines?.lines ?? []).map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }.filter { !$0.isEmpty }
        let failure = SSHFailure.classify(exit: ended, lastLine: lines.last, host: login.host,
                                          checkHint: settings.command.checkHint(for: login), lines: lines)
        // A remote shell that failed otherwise (no mkdir, a full disk) is a failed shipment, not a missing skynet.
        if failure.kind == .exited || failure.kind == .noSkynet {
            throw SSHFailure(kind: .shipFailed, reason: "upload: \(failure.reason)", fix: "retrying")
        }
        throw failure
    }
}
