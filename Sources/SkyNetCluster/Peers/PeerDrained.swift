import SkyNetScheduler

/// A task a draining peer gave back: the node cancelled it when its drain timeout
/// ran out, or closed the link at the end of its drain. Not a failure of the task: the
/// coordinator runs it elsewhere at once, at no attempt's cost (`Coordinator.run`).
public struct PeerDrained: SystemFailure, CustomStringConvertible {
    public let peer: String
    /// Whether the link ended (the system is gone), rather than the task being cancelled on it.
    public let disconnected: Bool

    public init(peer: String, disconnected: Bool) {
        self.peer = peer
        self.disconnected = disconnected
    }

    public var systemIsGone: Bool { disconnected }
    public var taskWasGivenBack: Bool { true }

    public var description: String { "\(peer) drains: the task was given back" }
}
