import SkyNetAuth
import SkyNetRuntime
import SkyNetTransport

/// How a coordinator reaches a node: a TCP connection to its port, or an `ssh` session that
/// runs `skynet node --stdio` on the host. Everything after the dial (hello, welcome,
/// keep-alive, liveness) needs only the `Connection`.
package protocol PeerDialer: Sendable {
    /// How the node is reached, for people: `127.0.0.1:9001`, `ssh alice@gpu1:2222`.
    var address: String { get }
    /// Whether the cluster token goes to the node: over TCP yes; over ssh no (the login is the
    /// authority, and a host never gets the coordinator's secret).
    var sendsToken: Bool { get }
    /// Opens the channel to the node, not yet started; bounded by `timeout`.
    func dial(timeout: Duration) async throws -> DialedLink
}

/// A channel to a node, ready for the hello.
package struct DialedLink: Sendable {
    /// The channel, not started.
    package let connection: Connection
    /// How long the welcome may take: over ssh the login and the node's start come first.
    package let welcomeBound: Duration
    /// Turns an error of the handshake or of the link's end into the one to report: over ssh,
    /// what ssh said (`SSHFailure`) rather than "connection closed".
    package let explain: @Sendable (any Error) async -> any Error
    /// Closes the channel and returns once what carried it is gone (over ssh: the `ssh`
    /// process, reaped; bounded). Over TCP closing is all there is.
    package let finish: @Sendable () async -> Void
    /// Told once the node's welcome arrived (over ssh: the host's log is forwarded from then on).
    package let welcomed: @Sendable () -> Void

    package init(connection: Connection, welcomeBound: Duration,
                explain: @escaping @Sendable (any Error) async -> any Error = { $0 },
                finish: (@Sendable () async -> Void)? = nil, welcomed: @escaping @Sendable () -> Void = {}) {
        self.connection = connection
        self.welcomeBound = welcomeBound
        self.explain = explain
        self.finish = finish ?? { connection.close() }
        self.welcomed = welcomed
    }
}

/// A node's TCP port.
package struct TCPDialer: PeerDialer {
    package let host: String
    package let port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    package var address: String { Socket.authority(host: host, port: port) }
    package var sendsToken: Bool { true }

    package func dial(timeout: Duration) async throws -> DialedLink {
        let socket = try await Socket.dial(host: host, port: port, timeout: timeout)
        return DialedLink(connection: Connection(socket: socket, peer: address), welcomeBound: timeout + Self.longestHold)
    }

    /// The longest a node with a token holds a hello back before it answers it at all, while
    /// its network, or the whole node, sees failed logins (docs/PROTOCOL.md, "Failed logins"):
    /// the welcome gets that long on top of the timeout, so a right client is slowed by
    /// someone else's guesses, never refused.
    static let longestHold = LoginBackoff().delays.most
}
