import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport

/// A transfer's two bounds: the task's deadline from the end of its upload, and once returned
/// files flow, their progress bound — which the task's, armed late by the pump's thread, never
/// replaces (a quick task's first lines may come before the pump says its upload is out).
struct TransferDeadlineTests {
    @Test func theTasksDeadlineArmedAfterTheReturnsBeganDoesNotReplaceTheirBound() {
        let clock = ManualClock()
        let deadline = TransferDeadline(clock: clock)
        let fired = Locked<[String]>([])
        deadline.progressed(bound: .seconds(1)) { fired.withLock { $0.append("stalled") } }
        deadline.arm(after: .seconds(600)) { fired.withLock { $0.append("deadline") } }
        clock.advance(by: .seconds(2))
        #expect(fired.withLock { $0 } == ["stalled"])
        #expect(clock.pendingDeadlines.isEmpty)
    }

    @Test func eachLineRestartsTheBoundAndTheTasksDeadlineGivesWayToIt() {
        let clock = ManualClock()
        let deadline = TransferDeadline(clock: clock)
        let fired = Locked<[String]>([])
        deadline.arm(after: .seconds(600)) { fired.withLock { $0.append("deadline") } }
        for _ in 0..<5 {
            clock.advance(by: .milliseconds(900))
            deadline.progressed(bound: .seconds(1)) { fired.withLock { $0.append("stalled") } }
        }
        #expect(fired.withLock { $0 }.isEmpty)
        #expect(clock.pendingDeadlines.count == 1)
        deadline.disarm()
        clock.advance(by: .seconds(700))
        #expect(fired.withLock { $0 }.isEmpty)
    }
}
