/// What a coordinator's links to its peers report.
public enum ClusterEvent: Sendable, CustomStringConvertible {
    case connected(String)
    case disconnected(String, reason: String)
    /// Not reachable; reported once until it connects, retried with backoff.
    case unreachable(String, address: String, error: String)
    /// Refused the hello for good (`unauthorized`, `unsupported-version`): reported once, with
    /// the fix (`refusalHint`), and asked again only rarely.
    case refused(String, code: String, message: String)
    /// A request timed out: no new work until it answers a ping.
    case unresponsive(String)
    case responsive(String)

    /// The peer's name.
    public var peer: String {
        switch self {
        case .connected(let name), .disconnected(let name, _), .unreachable(let name, _, _),
             .refused(let name, _, _), .unresponsive(let name), .responsive(let name): name
        }
    }

    /// The log line of the event.
    public var description: String {
        switch self {
        case .connected(let name): "[Cluster] Connected: \(name)"
        case .disconnected(let name, let reason): "[Cluster] Disconnected: \(name) (\(reason))"
        case .unreachable(let name, let address, let error): "[Cluster] Unreachable: \(name) at \(address) (\(error)); retrying"
        case .refused(let name, let code, _): "[Cluster] Refused by \(name): \(code) (\(refusalHint))"
        case .unresponsive(let name): "[Cluster] Unresponsive: \(name)"
        case .responsive(let name): "[Cluster] Responsive: \(name)"
        }
    }

    /// What the operator can do about a refusal (empty for other events).
    public var refusalHint: String {
        guard case .refused(_, let code, let message) = self else { return "" }
        switch code {
        case "unauthorized": return "set SKYNET_TOKEN to the nodes' token"
        case "unsupported-version": return (message.isEmpty ? "" : message + "; ") + "run the same skynet version as the nodes"
        default: return message
        }
    }

    /// Whether a hello refused with `code` will be refused again, whatever the timing.
    static func isPermanentRefusal(_ code: String) -> Bool {
        code == "unauthorized" || code == "unsupported-version"
    }
}
