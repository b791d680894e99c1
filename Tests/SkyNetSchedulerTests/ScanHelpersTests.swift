@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// The scan's helpers keep what a task group gave: each reports once, in the order they
/// ended; the loop waits for the next; cancelling stops every one running and each started
/// after, and each still reports.
@Suite(.timeLimit(.minutes(2)))
struct ScanHelpersTests {
    /// A slot to put in steps (the helpers do not look at it).
    func aReservation() async throws -> Reservation {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 1), capacity: 1)
        return try #require(await systems.tryReserve())
    }

    func step(_ input: Int, _ reservation: Reservation) -> Step {
        .finished(Attempt(task: ScanTask(input: input, duration: 0), attempt: 1), reservation, .success(""), 0)
    }

    func input(of step: Step) -> Int? {
        if case .finished(let work, _, _, _) = step { work.task.input } else { nil }
    }

    @Test func eachHelperReportsOnceAndTakeWaitsForTheNext() async throws {
        let reservation = try await aReservation()
        let helpers = ScanHelpers()
        let gates = (0..<300).map { _ in AsyncSignal<Void>() }
        for (index, gate) in gates.enumerated() {
            helpers.start { [self] in
                await gate.value
                return step(index, reservation)
            }
        }
        #expect(helpers.outstanding == 300)
        var random = SeededRandom(seed: 7)
        var taken: [Int] = []
        for index in Array(0..<300).shuffled(using: &random) {
            gates[index].fulfil(())
            // Only that one has ended: the next take waits for it, and returns it alone.
            let steps = await helpers.take()
            #expect(steps.compactMap(input(of:)) == [index])
            taken += steps.compactMap(input(of:))
        }
        #expect(Set(taken) == Set(0..<300) && taken.count == 300)
        #expect(helpers.outstanding == 0)
    }

    @Test func cancelAllStopsEveryHelperAndEachStartedAfterAndEachStillReports() async throws {
        let reservation = try await aReservation()
        let helpers = ScanHelpers()
        let started = Counter()
        let stopped: @Sendable () async -> Step = { [self] in
            started.increment()
            // An hour, unless cancelled: a helper that is not would hold the test to its limit.
            do { try await DeadlineTimer.shared.sleep(for: .seconds(3_600)) } catch { return .stopped }
            return step(-1, reservation)
        }
        for _ in 0..<1_000 { helpers.start(stopped) }
        try await awaitState(upTo: .seconds(30)) { started.value == 1_000 }
        helpers.cancelAll()
        for _ in 0..<10 { helpers.start(stopped) }
        var steps: [Step] = []
        while helpers.outstanding > 0 { steps += await helpers.take() }
        #expect(steps.count == 1_010)
        #expect(steps.allSatisfy { if case .stopped = $0 { true } else { false } })
    }
}

extension ScanHelpersTests {
    /// A helper started after `cancelAll` is cancelled before its first line runs, as a child
    /// added to a cancelled task group is: an attempt never sends its request.
    @Test func aHelperStartedAfterCancelAllRunsCancelledFromItsFirstLine() async throws {
        // On a loop of its own, a helper starts on another thread at once, racing `start`.
        let loop = try EventLoop(name: "test-helpers")
        let uncancelled = Counter()
        var steps = 0
        for round in 0..<10 {
            let helpers = ScanHelpers()
            helpers.cancelAll()
            for _ in 0..<1_000 {
                helpers.start(on: round.isMultiple(of: 2) ? loop : nil) {
                    if !Task.isCancelled { uncancelled.increment() }
                    return .stopped
                }
            }
            while helpers.outstanding > 0 { steps += await helpers.take().count }
        }
        #expect(steps == 10_000)
        #expect(uncancelled.value == 0, "\(uncancelled.value) of 10,000 began uncancelled")
    }
}

extension ScanHelpersTests {
    /// A helper that is no task (a request): counted until it reports, also when it reports
    /// before `start` returned; stopped by `cancelAll`; refused once cancelled (the caller
    /// then starts it as a task, which starts cancelled).
    @Test func requestHelpersAreCountedUntilTheyReportAndStoppedByCancelAll() async throws {
        let reservation = try await aReservation()
        let helpers = ScanHelpers()
        let stops = Counter()
        final class Request: StartedAttempt {
            let stop: @Sendable () -> Void
            init(_ stop: @escaping @Sendable () -> Void) { self.stop = stop }
            func cancel() { stop() }
        }
        // Reports inside `begin`, before it is recorded.
        let first = helpers.start { [self] report in
            report(step(0, reservation))
            return Request {}
        }
        #expect(first)
        let declined = helpers.start { _ in nil }
        #expect(declined == false, "declined: nothing started")
        // Report only when stopped.
        for input in 1...100 {
            let started = helpers.start { [self] report in
                Request {
                    stops.increment()
                    report(step(input, reservation))
                }
            }
            #expect(started)
        }
        #expect(helpers.outstanding == 101)
        #expect(await helpers.take().compactMap(input(of:)) == [0])
        #expect(helpers.outstanding == 100)
        helpers.cancelAll()
        #expect(stops.value == 100)
        var taken: [Int] = []
        while helpers.outstanding > 0 { taken += await helpers.take().compactMap(input(of:)) }
        #expect(taken.sorted() == Array(1...100))
        let afterCancelAll = helpers.start { _ in Request {} }
        #expect(afterCancelAll == false, "after cancelAll")
    }
}

extension CoordinatorTests {
    /// Cancelling the scan cancels its attempts, not only the loop: tasks of an hour end at
    /// once, none counted as run, and every slot is free when the scan returns.
    @Test func cancellingAScanStopsAttemptsThatWouldRunForAnHour() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 4, api: UnreliableAPI(failingEvery: 0)), capacity: 4)
        let log = EventLog()
        let coordinator = Coordinator(systems: systems) { log.append($0) }
        let scan = Task { await coordinator.run(makeTasks(10, duration: 3_600)) }
        try await awaitState(upTo: .seconds(30)) { log.all.count { if case .started = $0 { true } else { false } } == 4 }
        scan.cancel()
        let report = try await withTimeout(.seconds(30)) { await scan.value }
        #expect(report.interrupted)
        #expect(report.completed == 0 && report.notRun == 10)
        #expect(await systems.inFlight(on: "local") == 0)
    }
}
