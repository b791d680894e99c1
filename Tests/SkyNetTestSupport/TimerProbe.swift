@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

// Looking inside a DeadlineTimer (under its own lock), for the tests that check that nothing
// is left on its heap.

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

    /// The deadlines pending on `timer`'s heap, and how many entries it holds (nil when the
    /// heap could not be read: a test then fails rather than pass on nothing seen).
    package static func pending(_ timer: DeadlineTimer) -> (deadlines: [ContinuousClock.Instant], entries: Int?) {
        guard let locked = child(timer, "state") as? any InspectableUnderLock else { return ([], nil) }
        return locked.inspectUnderLock { state in
            guard let heap = child(state, "queue"), let entries = child(heap, "entries") else { return ([], nil) }
            let children = Mirror(reflecting: entries).children
            let deadlines = children.compactMap { child($0.value, "deadline") as? ContinuousClock.Instant }
            return (deadlines, children.count)
        }
    }
}
