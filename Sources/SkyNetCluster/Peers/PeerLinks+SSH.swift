import SkyNetLink
import SkyNetRuntime
import SkyNetSSH
import SkyNetScheduler
import SkyNetTransport

extension PeerLinks {
    /// How `node` is reached: ssh for a node with a login, else its TCP port.
    package static func dialer(for node: ClusterConfig.Node, settings: Settings) -> any PeerDialer {
        node.ssh.map { SSHDialer(name: node.name, login: $0, capacity: node.capacity, settings: settings.ssh) } ?? TCPDialer(host: node.host, port: node.port)
    }

    /// `--ship`: after a dial that found the host without this build (or with a copy that was
    /// not this build, removed), uploads it and returns nil (dial again at once); else the error
    /// to handle: `error` itself, or why the upload failed. `again`: the dial came right after a
    /// verified upload, yet found no intact copy: the host does not keep it, and shipping it
    /// again at once cannot help (it is for good: tried again at the pace of a refusal, not
    /// uploaded over and over).
    static func shipIfNeeded(after error: any Error, by dialer: any PeerDialer, again: Bool, timeout: Duration) async -> (any Error)? {
        guard let failure = error as? SSHFailure, failure.kind == .needsShipment || failure.kind == .copyMismatch,
              let ssh = dialer as? SSHDialer else { return error }
        if again {
            return SSHFailure(kind: .cannotShip, reason: "skynet --ship: the copy just shipped and checked was gone (or damaged) at the next login",
                              fix: "check that ~/.cache/skynet on that host keeps its files (and is the same for every login)")
        }
        do {
            try await ssh.ship(timeout: timeout)
            return nil
        } catch {
            return error
        }
    }

    /// The event that says `node`'s copy of this build was not this build and is shipped again,
    /// when `error` says so; nil otherwise, and right after an upload (that failure is for good).
    static func shippingAgain(_ node: String, after error: any Error, justShipped: Bool) -> ClusterEvent? {
        guard !justShipped, let failure = error as? SSHFailure, failure.kind == .copyMismatch else { return nil }
        return .shippingAgain(node, reason: failure.reason)
    }

    /// Why a link ended, for `Disconnected`: over ssh, ssh's own last words when it said any
    /// (`ssh: Connection to gpu1 closed by remote host`).
    static func lastWords(of peer: PeerConnection, _ reason: Connection.CloseReason) async -> String {
        let explained = await peer.explain(PeerDisconnected(peer: peer.name, reason: reason.description))
        guard let failure = explained as? SSHFailure, failure.kind != .ended else { return reason.description }
        return failure.reason
    }
}

/// Which ssh nodes failed their first dial, to say when every one did and none ever connected
/// (`PeerLinks.everySSHHostFailed`): a scan over ssh hosts alone then has nothing to run on.
final class SSHHostFailures: Sendable {
    private struct State {
        /// Each ssh node's first failure, once it had one.
        var failures: [String: String] = [:]
        var anyConnected = false
    }

    private let hosts: [String]
    private let state = Locked(State())
    private let signal: AsyncSignal<String>

    init(hosts: [String], signal: AsyncSignal<String>) {
        self.hosts = hosts
        self.signal = signal
    }

    /// Notes what `event` says of an ssh node; fulfils the signal in the same step that finds
    /// every node failed, so a node that connected meanwhile counts.
    func record(_ event: ClusterEvent) {
        guard hosts.contains(event.peer) else { return }
        state.withLock { state in
            switch event {
            case .connected:
                state.anyConnected = true
            case .sshUnreachable(let name, _, let reason, _), .unreachable(let name, _, let reason):
                if state.failures[name] == nil { state.failures[name] = reason }
                guard !state.anyConnected, state.failures.count == hosts.count else { return }
                signal.fulfil(hosts.map { "\($0) (\(state.failures[$0] ?? ""))" }.joined(separator: ", "))
            default:
                break
            }
        }
    }
}
