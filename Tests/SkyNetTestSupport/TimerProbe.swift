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

    /// The deadlines pending on `timer`'s heap, and the size of its positions table.
    package static func pending(_ timer: DeadlineTimer) -> (deadlines: [ContinuousClock.Instant], positions: Int) {
        guard let locked = child(timer, "state") as? any InspectableUnderLock else { return ([], -1) }
        return locked.inspectUnderLock { state in
            guard let heap = child(state, "queue"), let entries = child(heap, "entries"), let positions = child(heap, "positions")
            else { return ([], -1) }
            let deadlines = Mirror(reflecting: entries).children.compactMap { child($0.value, "deadline") as? ContinuousClock.Instant }
            return (deadlines, Mirror(reflecting: positions).children.count)
        }
    }
}
