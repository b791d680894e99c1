/// What a coordinator's links to its peers report.
public enum ClusterEvent: Sendable, CustomStringConvertible {
    case connected(String)
    case disconnected(String, reason: String)
    /// Not reachable; reported once until it connects, retried with backoff.
    case unreachable(String, address: String, error: String)
    /// A request timed out: no new work until it answers a ping.
    case unresponsive(String)
    case responsive(String)

    /// The peer's name.
    public var peer: String {
        switch self {
        case .connected(let name), .disconnected(let name, _), .unreachable(let name, _, _),
             .unresponsive(let name), .responsive(let name): name
        }
    }

    /// The log line of the event.
    public var description: String {
        switch self {
        case .connected(let name): "[Cluster] Connected: \(name)"
        case .disconnected(let name, let reason): "[Cluster] Disconnected: \(name) (\(reason))"
        case .unreachable(let name, let address, let error): "[Cluster] Unreachable: \(name) at \(address) (\(error)); retrying"
        case .unresponsive(let name): "[Cluster] Unresponsive: \(name)"
        case .responsive(let name): "[Cluster] Responsive: \(name)"
        }
    }
}
