@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// Tracks how many runs are inside it at once; answers by a rule per attempt.
actor RuleSystem: ScanSystem {
    enum Answer { case ok, fail, busy, disconnect }
    nonisolated let name: String
    nonisolated let isLocal: Bool
    private let rule: @Sendable (ScanTask, Int) -> Answer
    private var calls = 0
    private(set) var running = 0
    private(set) var most = 0

    init(name: String, isLocal: Bool, rule: @escaping @Sendable (ScanTask, Int) -> Answer) {
        self.name = name
        self.isLocal = isLocal
        self.rule = rule
    }

    func run(_ task: ScanTask) async throws -> String {
        calls += 1
        running += 1
        most = max(most, running)
        defer { running -= 1 }
        let answer = rule(task, calls)
        try await DeadlineTimer.shared.sleep(until: .now + .microseconds(Int.random(in: 0...500)))
        switch answer {
        case .ok: return String(task.input)
        case .fail: throw ScanFailure(code: "task-failed", message: "rule")
        case .busy: throw ScanFailure(code: "busy", message: "rule")
        case .disconnect: throw PeerDisconnected(peer: name, reason: "rule")
        }
    }
}

/// The freed slot goes to the next work: re-runs, bounces, a disconnecting peer and a stop
/// mid-scan leave every slot free and no system over its capacity.
extension CoordinatorTests {
    func makeSystems() async -> (Systems, [RuleSystem]) {
        let systems = Systems()
        let local = RuleSystem(name: "local", isLocal: true) { task, _ in task.input % 9 == 0 ? .fail : .ok }
        let beta = RuleSystem(name: "beta", isLocal: false) { task, call in call % 5 == 0 ? .busy : (task.input % 11 == 0 ? .fail : .ok) }
        let gamma = RuleSystem(name: "gamma", isLocal: false) { _, call in call == 40 ? .disconnect : .ok }
        await systems.add(local, capacity: 2)
        await systems.add(beta, capacity: 3)
        await systems.add(gamma, capacity: 2)
        return (systems, [local, beta, gamma])
    }

    @Test func reRunsBouncesAndADisconnectingPeerLeaveEverySlotFreeAndNoSystemOverCapacity() async throws {
        let (systems, all) = await makeSystems()
        var coordinator = Coordinator(systems: systems, maxAttempts: 3)
        coordinator.busyRest = BusyBackoff(first: .microseconds(100), most: .milliseconds(1))
        let report = await coordinator.run((0..<600).map { ScanTask(input: $0, duration: 0) })
        #expect(report.completed + report.gaveUp == 600)
        for system in all {
            #expect(await systems.inFlight(on: system.name) == 0, "\(system.name)")
            #expect(await system.running == 0)
        }
        #expect(await all[0].most <= 2)
        #expect(await all[1].most <= 3)
        #expect(await all[2].most <= 2)
    }

    @Test func stoppingMidScanLeavesEverySlotFree() async throws {
        for stopAfter in [1, 17, 150] {
            let (systems, all) = await makeSystems()
            let log = EventLog()
            var coordinator = Coordinator(systems: systems, maxAttempts: 3) { log.append($0) }
            coordinator.busyRest = BusyBackoff(first: .microseconds(100), most: .milliseconds(1))
            // Drawn as slots free, not made up front: 100,000 tasks made before each of the three
            // scans were seconds of computing on the pool under the thread sanitizer.
            let scan = Task { await coordinator.run((0..<100_000).lazy.map { ScanTask(input: $0, duration: 0) }, count: 100_000) }
            try await log.waitForCompletions(stopAfter)
            scan.cancel()
            let report = try await withTimeout(.seconds(60)) { await scan.value }  // 100,000 tasks: a scan that ignores the cancel runs far longer
            #expect(report.interrupted)
            for system in all { #expect(await systems.inFlight(on: system.name) == 0, "\(system.name) after \(stopAfter)") }
        }
    }
}

/// Tasks wait in a node's line only while the scan has a task for every slot still to come.
extension CoordinatorTests {
    @Test func theLastTasksOfAScanWaitForAFreeSlotNotInANodesLine() async throws {
        for (tasks, mostInFlight) in [(3, 1), (12, 2)] {
            let systems = Systems()
            await systems.add(RuleSystem(name: "beta", isLocal: false) { _, _ in .ok }, capacity: 1, queue: 1)
            await systems.add(RuleSystem(name: "gamma", isLocal: false) { _, _ in .ok }, capacity: 1, queue: 1)
            let report = await Coordinator(systems: systems).run((0..<tasks).map { ScanTask(input: $0, duration: 0) })
            #expect(report.completed == tasks)
            // Three tasks over two slots: the third goes to whichever slot frees first. Twelve:
            // while at least two are still to come, each slot's next waits in its node's line.
            #expect(await systems.highWater["beta"] == mostInFlight, "\(tasks) tasks")
            #expect(await systems.highWater["gamma"] == mostInFlight, "\(tasks) tasks")
        }
    }
}
