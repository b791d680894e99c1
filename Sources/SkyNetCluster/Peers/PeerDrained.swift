import SkyNetScheduler

/// A task a draining peer gave back: the node cancelled it when its drain timeout
/// ran out, or closed the link at the end of its drain. Not a failure of the task: the
/// coordinator runs it elsewhere at once, at no attempt's cost (`Coordinator.run`).
package struct PeerDrained: SystemFailure, CustomStringConvertible {
    package let peer: String
    /// Whether the link ended (the system is gone), rather than the task being cancelled on it.
    package let disconnected: Bool

    package init(peer: String, disconnected: Bool) {
        self.peer = peer
        self.disconnected = disconnected
    }

    package var systemIsGone: Bool { disconnected }
    package var taskWasGivenBack: Bool { true }

    package var description: String { "\(peer) drains: the task was given back" }
}
