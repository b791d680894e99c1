@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A system that counts its attempts by whether they ran on `loop`, which it may prefer.
actor LoopCountingSystem: ScanSystem {
    nonisolated let name: String
    nonisolated let isLocal: Bool
    nonisolated let preferredExecutor: (any TaskExecutor)?
    private let loop: EventLoop
    private let counts = Locked((onLoop: 0, elsewhere: 0))

    init(name: String, isLocal: Bool, loop: EventLoop, prefersIt: Bool) {
        self.name = name
        self.isLocal = isLocal
        self.loop = loop
        preferredExecutor = prefersIt ? loop : nil
    }

    nonisolated func run(_ task: ScanTask) async throws -> String {
        let here = loop.isCurrent
        counts.withLock { here ? ($0.onLoop += 1) : ($0.elsewhere += 1) }
        try await DeadlineTimer.shared.sleep(until: .now + .microseconds(200))
        return String(task.input)
    }

    nonisolated var tally: (onLoop: Int, elsewhere: Int) { counts.withLock { $0 } }
}

extension CoordinatorTests {
    /// Each attempt runs on the executor its system prefers (a peer's: the loop of its link);
    /// a system that prefers none runs its attempts on the pool.
    @Test func eachAttemptRunsWhereItsSystemPrefers() async throws {
        let loop = try EventLoop(name: "test-attempts")
        let local = LoopCountingSystem(name: "local", isLocal: true, loop: loop, prefersIt: false)
        let beta = LoopCountingSystem(name: "beta", isLocal: false, loop: loop, prefersIt: true)
        let systems = Systems()
        await systems.add(local, capacity: 2)
        await systems.add(beta, capacity: 2)
        let report = await Coordinator(systems: systems).run((0..<200).map { ScanTask(input: $0, duration: 0) })
        #expect(report.completed == 200)
        #expect(local.tally.onLoop == 0 && local.tally.elsewhere > 0, "\(local.tally)")
        #expect(beta.tally.elsewhere == 0 && beta.tally.onLoop > 0, "\(beta.tally)")
        #expect(local.tally.elsewhere + beta.tally.onLoop == 200)
    }
}
