@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

// Looking inside a DeadlineTimer (under its own lock), for the tests that check that nothing
// is left in its queue.

package protocol InspectableUnderLock {
    func inspectUnderLock<R>(_ body: (Any) -> R) -> R
}

extension Guarded: InspectableUnderLock {
    package func inspectUnderLock<R>(_ body: (Any) -> R) -> R { withLock { body($0) } }
}

package enum TimerProbe {
    private static func child(_ value: Any, _ label: String) -> Any? {
        Mirror(reflecting: value).children.first { $0.label == label }?.value
    }

    /// The deadlines pending in `timer`'s queue, and how many entries it stores (nil when the
    /// queue could not be read: a test then fails rather than pass on nothing seen).
    package static func pending(_ timer: DeadlineTimer) -> (deadlines: [ContinuousClock.Instant], entries: Int?) {
        guard let locked = child(timer, "state") as? any InspectableUnderLock else { return ([], nil) }
        return locked.inspectUnderLock { state in
            guard let queue = child(state, "queue") as? TimerQueue else { return ([], nil) }
            return (queue.deadlines, queue.storedCount)
        }
    }
}
