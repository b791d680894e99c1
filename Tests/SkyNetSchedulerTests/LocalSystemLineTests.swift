@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// `LocalSystem`'s line: a task allowed to wait for a slot waits, first come first served, up to
/// the line's length; it leaves the line when cancelled, after its wait, or when refused.
@Suite(.timeLimit(.minutes(3)))
struct LocalSystemLineTests {
    /// A system of `capacity` slots and a line of `queue`, whose `hold` job runs until its
    /// sector's gate opens and returns the sector.
    final class Held: Sendable {
        let gates = Locked<[Int: AsyncSignal<Void>]>([:])
        let order = Locked<[Int]>([])
        let system: LocalSystem

        init(capacity: Int, queue: Int) throws {
            var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
            let gates = self.gates, order = self.order
            try jobs.register("hold") { request in
                order.withLock { $0.append(request.sector) }
                await Self.gate(request.sector, in: gates).value
                return String(request.sector)
            }
            system = LocalSystem(name: "alpha", capacity: capacity, queue: queue, jobs: jobs, clock: DeadlineTimer.shared)
        }

        static func gate(_ sector: Int, in gates: Locked<[Int: AsyncSignal<Void>]>) -> AsyncSignal<Void> {
            gates.withLock { gates in
                if let gate = gates[sector] { return gate }
                let gate = AsyncSignal<Void>()
                gates[sector] = gate
                return gate
            }
        }

        func open(_ sector: Int) {
            Self.gate(sector, in: gates).fulfil(())
        }

        func run(_ sector: Int, waiting: Duration? = .seconds(60)) -> Task<String, any Error> {
            Task { try await system.run(ScanTask(input: sector, job: "hold", text: ""), waiting: waiting) }
        }

        var started: [Int] { order.withLock { $0 } }

        /// Starts 1, which holds the one slot, then 2 and 3, which wait in line in that order.
        func holdingOneWithTwoInLine() async throws -> [Task<String, any Error>] {
            let first = run(1)
            try await awaitState { self.started == [1] }
            var tasks = [first]
            for sector in [2, 3] {
                tasks.append(run(sector))
                try await awaitState { await self.system.waitingCount == sector - 1 }
            }
            return tasks
        }
    }

    @Test func aWaitingTaskStartsInTheSlotThatFreesInTheOrderItCame() async throws {
        let held = try Held(capacity: 1, queue: 2)
        let tasks = try await held.holdingOneWithTwoInLine()
        let (first, second, third) = (tasks[0], tasks[1], tasks[2])
        // The line is full: a fourth is busy at once, and one that may not wait is too.
        await #expect(throws: ScanFailure.busy("alpha", capacity: 1)) { try await held.run(4).value }
        await #expect(throws: ScanFailure.busy("alpha", capacity: 1)) { try await held.run(5, waiting: nil).value }
        #expect(held.system.counters.running == 1)

        held.open(1)
        #expect(try await first.value == "1")
        try await awaitState { held.started == [1, 2] }
        // Handed over: still one running, never two, never none counted.
        #expect(held.system.counters.running == 1)
        held.open(3)  // the third's gate opens before it starts: it still waits its turn
        held.open(2)
        #expect(try await second.value == "2")
        #expect(try await third.value == "3")
        #expect(held.started == [1, 2, 3])
        #expect(held.system.counters == SystemCounters(running: 0, completed: 3, failed: 0))
        #expect(await held.system.highWater == 1)
    }

    @Test func aCancelledWaiterLeavesTheLineAndTheSlotGoesToTheNext() async throws {
        let held = try Held(capacity: 1, queue: 2)
        let tasks = try await held.holdingOneWithTwoInLine()
        let (first, second, third) = (tasks[0], tasks[1], tasks[2])
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        try await awaitState { await held.system.waitingCount == 1 }
        held.open(1)
        held.open(3)
        #expect(try await first.value == "1")
        #expect(try await third.value == "3")
        #expect(held.started == [1, 3])
        #expect(held.system.counters.running == 0)
    }

    @Test func aTaskThatWaitsPastItsBoundIsBusyAndNeverRuns() async throws {
        let held = try Held(capacity: 1, queue: 1)
        let first = held.run(1)
        try await awaitState { held.started == [1] }
        let late = held.run(2, waiting: .milliseconds(100))
        await #expect(throws: ScanFailure(code: .busy, message: "alpha had no free slot within 0.1 s (all 1 busy)")) {
            try await late.value
        }
        #expect(await held.system.waitingCount == 0)
        held.open(1)
        #expect(try await first.value == "1")
        #expect(held.started == [1])
        #expect(held.system.counters.running == 0)
    }

    @Test func refusingTheLineAnswersEveryWaiterBusyAndLeavesTheRunningAlone() async throws {
        let held = try Held(capacity: 1, queue: 2)
        let first = held.run(1)
        try await awaitState { held.started == [1] }
        let waiters = [held.run(2), held.run(3)]
        try await awaitState { await held.system.waitingCount == 2 }
        await held.system.refuseWaiting("alpha is draining")
        for waiter in waiters {
            await #expect(throws: ScanFailure(code: .busy, message: "alpha is draining")) { try await waiter.value }
        }
        // One that comes later does not wait either.
        await #expect(throws: ScanFailure(code: .busy, message: "alpha is draining")) { try await held.run(4).value }
        #expect(await held.system.waitingCount == 0)
        held.open(1)
        #expect(try await first.value == "1")
        #expect(held.started == [1])
    }

    /// Tasks that come while the line is refused, on other threads: each is `busy` with the
    /// refusal at once, whether it came before (and was in line) or after; none joins the line
    /// after the refusal emptied it (it would wait its 60 s, or take a slot that frees).
    @Test func aTaskThatComesAsTheLineIsRefusedIsBusyAtOnce() async throws {
        for _ in 0..<200 {
            let held = try Held(capacity: 1, queue: 1_000)
            let first = held.run(1)
            try await awaitState { held.started == [1] }
            let busy = Locked(0)
            let arrivals = (2...17).map { sector in
                Task {
                    do {
                        _ = try await held.system.run(ScanTask(input: sector, job: "hold", text: ""), waiting: .seconds(60))
                    } catch let failure as ScanFailure where failure == ScanFailure(code: .busy, message: "alpha is draining") {
                        busy.withLock { $0 += 1 }
                    }
                }
            }
            await held.system.refuseWaiting("alpha is draining")
            try await awaitState(upTo: .seconds(20)) { busy.withLock { $0 } == arrivals.count }
            #expect(await held.system.waitingCount == 0)
            held.open(1)
            #expect(try await first.value == "1")
            for arrival in arrivals { try await arrival.value }
        }
    }

    @Test func withoutALineEveryTaskBeyondTheCapacityIsBusy() async throws {
        let held = try Held(capacity: 1, queue: 0)
        let first = held.run(1)
        try await awaitState { held.started == [1] }
        await #expect(throws: ScanFailure.busy("alpha", capacity: 1)) { try await held.run(2).value }
        held.open(1)
        #expect(try await first.value == "1")
    }
}
