@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// The gate that bounds how many links start dialling at once: the limit holds, waiting dials
/// get in in the order they came, a place comes back once (from the dial's end or its
/// patience, on one timer for the gate), and a cancelled wait neither hangs nor takes a place.
/// What waits is read from the gate itself (`waitingCount` changes under its lock, within
/// `leave` and `advance`); the order in which dials got in, from what each recorded.
@Suite(.timeLimit(.minutes(1)))
struct DialGateTests {
    /// A dial entering `gate` on a task of its own, once the dials before it wait: records its
    /// number in `admitted` when it gets in (nil when cancelled first), and returns its place.
    private final class Dial: Sendable {
        let task: Task<DialGate.Place?, Never>

        init(_ number: Int, at gate: DialGate, into admitted: Watched<[Int]>) async throws {
            let before = gate.waitingCount
            task = Task {
                let place = await gate.enter()
                if place != nil { admitted.update { $0.append(number) } }
                return place
            }
            try await awaitState { gate.waitingCount == before + 1 }
        }

        func leave() async { await task.value?.leave() }
    }

    @Test func atMostTheLimitStartAndTheOthersGetInInTheOrderTheyCame() async throws {
        let gate = DialGate(limit: 2, patience: .seconds(60), clock: ManualClock())
        let first = try #require(await gate.enter()), second = try #require(await gate.enter())
        let admitted = Watched<[Int]>([])
        var dials: [Dial] = []
        defer { for dial in dials { dial.task.cancel() } }
        for number in 3...5 { dials.append(try await Dial(number, at: gate, into: admitted)) }
        #expect(gate.waitingCount == 3, "a dial got in past the limit of 2")

        first.leave()
        #expect(gate.waitingCount == 2)
        try await admitted.wait { $0 == [3] }
        first.leave()  // a place comes back once, however often it is left
        #expect(gate.waitingCount == 2, "the second leave of one place let another dial in")
        second.leave()
        try await admitted.wait { $0 == [3, 4] }
        #expect(gate.waitingCount == 1)

        await dials[0].leave()
        try await admitted.wait { $0 == [3, 4, 5] }
        await dials[1].leave()
        await dials[2].leave()
        // Every place is back: two dials get in at once again, and a third waits.
        let again = (try #require(await gate.enter()), try #require(await gate.enter()))
        dials.append(try await Dial(6, at: gate, into: admitted))
        #expect(gate.waitingCount == 1)
        again.0.leave()
        again.1.leave()
        try await admitted.wait { $0 == [3, 4, 5, 6] }
    }

    @Test func aPlaceHeldForThePatienceIsFreeAgainAndTheTimerIsSetAgainForTheNext() async throws {
        let clock = ManualClock()
        let gate = DialGate(limit: 1, patience: .milliseconds(500), clock: clock)
        let slow = try #require(await gate.enter())
        #expect(clock.pendingDeadlines.isEmpty, "a timer was set while no dial waited")
        let admitted = Watched<[Int]>([])
        var dials: [Dial] = []
        defer { for dial in dials { dial.task.cancel() } }
        for number in 2...4 { dials.append(try await Dial(number, at: gate, into: admitted)) }
        #expect(clock.pendingDeadlines.count == 1, "one timer serves every dial that waits")

        clock.advance(by: .milliseconds(499))
        #expect(gate.waitingCount == 3, "the place came back before the patience was over")
        clock.advance(by: .milliseconds(1))
        #expect(gate.waitingCount == 2)
        try await admitted.wait { $0 == [2] }

        // The slow dial ending later gives nothing back: its place went with the patience.
        slow.leave()
        #expect(gate.waitingCount == 2)
        // The timer was set again, for the place the second dial has held since then.
        clock.advance(by: .milliseconds(500))
        #expect(gate.waitingCount == 1)
        try await admitted.wait { $0 == [2, 3] }
        await dials[1].leave()
        try await admitted.wait { $0 == [2, 3, 4] }
        await dials[2].leave()
        await dials[0].leave()
    }

    @Test func aCancelledWaitGoesOnAtOnceWithoutAPlace() async throws {
        let gate = DialGate(limit: 1, patience: .seconds(60), clock: ManualClock())
        let only = try #require(await gate.enter())
        let admitted = Watched<[Int]>([])
        let cancelled = try await Dial(2, at: gate, into: admitted)
        let after = try await Dial(3, at: gate, into: admitted)
        defer { after.task.cancel() }

        cancelled.task.cancel()
        #expect(await cancelled.task.value == nil, "a cancelled dial was given a place")
        #expect(gate.waitingCount == 1)
        // The place it passed by goes to the next one.
        only.leave()
        try await admitted.wait { $0 == [3] }
        await after.leave()
        // A dial whose task is already cancelled gets no place either, and never waits.
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await gate.enter()
        }
        #expect(await late.value == nil)
    }

    /// Links run below the scan (`.high` in `skynet scan`), so that the scan hands tasks to the
    /// peers already linked before more links are set up.
    @Test func aLinksTaskRunsAtMediumPriority() async throws {
        let table = PeerLinkTable()
        let seen = Watched<TaskPriority?>(nil)
        table.start("alpha") {
            seen.update { $0 = Task.currentPriority }
            return false
        }
        try await seen.wait { $0 != nil }
        _ = table.stop()
        #expect(seen.value == .medium)
    }
}
