/// A failure of the system a task ran on rather than of the task: the scheduler learns from it
/// that the system is gone, or that the task was given back, without knowing how systems are
/// reached (a peer's link conforms; the scheduler knows no network).
package protocol SystemFailure: Error {
    /// The system is gone: no other task is handed to it.
    var systemIsGone: Bool { get }
    /// The system gave the task back unrun or cancelled (it drains): not the task's failure,
    /// and no attempt is spent; it runs on the next free slot.
    var taskWasGivenBack: Bool { get }
}
