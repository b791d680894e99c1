import SkyNetLink
import SkyNetRuntime
import SkyNetScheduler
import SkyNetSSH
import SkyNetTransport
import SkyNetWire

/// What a ping found about one peer of a cluster file.
package struct PeerStatus: Sendable {
    package enum State: Sendable {
        case up(Pong, roundTripMilliseconds: Double, link: LinkProtection)
        /// Why it is down, in a word or two: refused, timed out, unauthorized, unknown host, …
        case down(String)
    }

    package let node: ClusterConfig.Node
    package let state: State

    package var isUp: Bool { if case .up = state { true } else { false } }

    /// Connects (over TCP, or logs in with `ssh` for an ssh node), says hello and pings
    /// `node`, each step bounded by `timeout`. An ssh node never gets the token.
    package static func probe(_ node: ClusterConfig.Node, token: String?, timeout: Duration,
                             ssh: SSHSettings = SSHSettings()) async -> PeerStatus {
        var settings = PeerLinks.Settings(timeout: timeout, token: token)
        settings.ssh = ssh
        let dialer = PeerLinks.dialer(for: node, settings: settings)
        do {
            let peer = try await PeerConnection.open(name: node.name, dialer: dialer,
                                                     token: dialer.sendsToken ? token : nil, timeout: timeout)
            defer { peer.close() }
            let id = peer.nextID()
            let clock = ContinuousClock(), start = clock.now
            let reply = try await withTimeout(timeout) { try await peer.request(id: id, .ping(id: id)) }
            guard case .pong(_, let pong) = reply else { return PeerStatus(node: node, state: .down("bad reply")) }
            let milliseconds = (clock.now - start).seconds * 1000
            return PeerStatus(node: node, state: .up(pong, roundTripMilliseconds: milliseconds, link: peer.protection(over: dialer)))
        } catch {
            return PeerStatus(node: node, state: .down(reason(error)))
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case let error as SSHFailure: error.reason
        case let error as SocketError where error.code == ECONNREFUSED: "refused"
        case let error as SocketError where error.code == ETIMEDOUT: "timed out"
        case let error as SocketError where error.operation.hasPrefix("resolve"): "unknown host"
        case is TimeoutError: "timed out"
        case let error as WireError where error.code == .unauthorized: "unauthorized"
        case is PeerUnauthenticated: "not authenticated (it does not know the token)"
        case let error as WireError: error.code.rawValue
        case is PeerDisconnected: "closed the connection"
        default: "\(error)"
        }
    }
}
