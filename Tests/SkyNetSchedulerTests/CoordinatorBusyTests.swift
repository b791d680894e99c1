@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// `busy` is back-pressure: it costs no attempt, prints no re-run, and a scan ends as soon as
/// its work does, whatever slots still rest or wait.
@Suite(.timeLimit(.minutes(3)))
struct CoordinatorBusyTests {
    func makeTasks(_ count: Int, duration: Double = 0) -> [ScanTask] {
        (0..<count).map { ScanTask(input: $0, duration: duration) }
    }

    /// The old coordinator counted the 51st `busy` of a task as a failed attempt.
    @Test func aHundredBusyAnswersInARowCostATaskNoAttempt() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        let beta = BusySystem(name: "beta", busyAnswers: 100)
        await systems.add(beta, capacity: 1)
        let log = EventLog()
        var coordinator = Coordinator(systems: systems, maxAttempts: 1) { log.append($0) }
        coordinator.busyRest = BusyBackoff(first: .microseconds(100), most: .milliseconds(1))
        let report = await coordinator.run(makeTasks(1))
        #expect(report.completed == 1)
        #expect(report.gaveUp == 0)
        #expect(log.rerunCount == 0)  // no `Re-run task:` line for a bounce
        #expect(report.reruns == 0)
        #expect(report.busyBounces == 100)
        #expect(report.systems["beta"]?.busy == 100)
        #expect(report.systems["beta"]?.failed == 0)
        #expect(await beta.calls == 101)
    }

    @Test func aSystemThatIsAlwaysBusyLeavesTheWorkToTheOthersAtNoCost() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        let full = BusySystem(name: "full", busyAnswers: .max)
        await systems.add(full, capacity: 4)
        await systems.add(LocalPeer(name: "good", api: UnreliableAPI(failingEvery: 0)), capacity: 2)
        let log = EventLog()
        let report = await Coordinator(systems: systems, maxAttempts: 1) { log.append($0) }.run(makeTasks(40, duration: 0.005))
        #expect(report.completed == 40)
        #expect(report.completedBySystem == ["good": 40])
        #expect(report.gaveUp == 0)
        #expect(log.rerunCount == 0)
        #expect(report.busyBounces == (await full.calls))
        #expect(await systems.inFlight(on: "full") == 0)
    }

    @Test func theRestAfterBusyGrowsFromFiftyMillisecondsToTwoSecondsAndStartsAgainAfterAnAnswer() {
        var backoff = BusyBackoff()
        let ceilings: [Duration] = [.milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(400),
                                    .milliseconds(800), .milliseconds(1600), .seconds(2), .seconds(2), .seconds(2)]
        for ceiling in ceilings {
            let rest = backoff.bounced(on: "beta")
            #expect(rest >= ceiling / 2 && rest <= ceiling)
        }
        for _ in 0..<100 { #expect(backoff.bounced(on: "beta") <= .seconds(2)) }
        #expect(backoff.bounced(on: "gamma") <= .milliseconds(50))  // each system has its own run
        backoff.answered(on: "beta")
        #expect(backoff.bounced(on: "beta") <= .milliseconds(50))
    }

    /// A slot that rests after `busy` and the slot request parked for the bounced task are
    /// left behind when the last task completes elsewhere: the scan does not wait for them.
    @Test func aDispatchOnlyScanEndsAtItsLastCompletionThoughSlotsStillRestOrWait() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        await systems.add(BusySystem(name: "full", busyAnswers: .max), capacity: 1)
        await systems.add(LocalPeer(name: "good", api: UnreliableAPI(failingEvery: 0)), capacity: 1)
        let log = EventLog()
        var coordinator = Coordinator(systems: systems) { log.append($0) }
        coordinator.busyRest = BusyBackoff(first: .seconds(300), most: .seconds(300))
        let scan = coordinator
        let clock = ContinuousClock(), start = clock.now
        let report = try await withTimeout(.seconds(120)) { await scan.run(makeTasks(3, duration: 0.05)) }
        #expect(clock.now - start < .seconds(60))  // far below the 300 s rest; generous for a loaded machine (33 s seen)
        #expect(report.completed == 3 && !report.interrupted)
        #expect(report.busyBounces >= 1)
        #expect(await systems.inFlight(on: "full") == 0)
        #expect(await systems.inFlight(on: "good") == 0)
        #expect(await systems.waiterCount == 0)
    }

    /// Tasks come from a lazy sequence, one as a slot frees: none is made ahead of its slot.
    @Test func tasksAreDrawnFromTheirSourceOnlyAsSlotsFree() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(capacity: 2, api: UnreliableAPI(failingEvery: 0)), capacity: 2)
        let made = Counter()
        let most = Locked(0)
        let log = EventLog()
        let tasks = (0..<1_000_000_000).lazy.map { input in
            made.increment()
            return ScanTask(input: input, duration: 0)
        }
        let coordinator = Coordinator(systems: systems) { event in
            log.append(event)
            if case .completed = event {
                let completed = log.completedInputs.count
                most.withLock { $0 = max($0, made.value - completed) }
            }
        }
        let scan = Task { await coordinator.run(tasks, count: 1_000_000_000) }
        // 200 completions one after another through actors on the pool: 0.03 s alone, but
        // more than 30 s while the whole thread-sanitizer run starts beside it (every hop waits
        // behind the other suites' work). A hang guard, so a generous one.
        try await log.waitForCompletions(200, upTo: .seconds(120))
        scan.cancel()
        let report = try await withTimeout(.seconds(30)) { await scan.value }
        #expect(report.interrupted)
        #expect(report.total == 1_000_000_000)
        #expect(report.notRun == 1_000_000_000 - report.completed)
        #expect(most.withLock { $0 } <= 2 + 1 + 1)  // running, drawn ahead, and one being recorded
    }
}

/// A peer that answers `busy` to its first `busyAnswers` calls, then runs tasks at once.
actor BusySystem: ScanSystem {
    nonisolated let name: String
    nonisolated var isLocal: Bool { false }
    private let busyAnswers: Int
    private(set) var calls = 0

    init(name: String, busyAnswers: Int) {
        self.name = name
        self.busyAnswers = busyAnswers
    }

    func run(_ task: ScanTask) async throws -> String {
        calls += 1
        guard calls > busyAnswers else { throw ScanFailure.busy(name, capacity: 0) }
        return String(task.input)
    }
}
