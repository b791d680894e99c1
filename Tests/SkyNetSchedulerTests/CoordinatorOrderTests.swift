@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
@testable import SkyNetWork
import Testing

/// `Coordinator.orderWindow`: what keeps `--keep-order` output bounded.
@Suite(.timeLimit(.minutes(3)))
struct CoordinatorOrderTests {
    enum Seen: Equatable { case started(Int), completed(Int) }

    /// Sector 0 waits for a gate; the rest finish at once.
    func run(window: Int?) async throws -> [Seen] {
        let gate = AsyncSignal<Void>()
        var jobs = JobRegistry()
        try jobs.register("hold") { request in
            if request.sector == 0 { await gate.value }
            return request.input
        }
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 4, jobs: jobs), capacity: 4)
        let seen = Locked<[Seen]>([])
        var coordinator = Coordinator(systems: systems) { event in
            let completedOthers: Int = seen.withLock { seen in
                switch event {
                case .started(let task, _, _, _): seen.append(.started(task.input))
                case .completed(let task, _, _, _, _, _): seen.append(.completed(task.input))
                default: break
                }
                return seen.filter { if case .completed(let sector) = $0 { sector != 0 } else { false } }.count
            }
            // Three other sectors done while sector 0 still runs: let it finish.
            if completedOthers == 3 { gate.fulfil(()) }
        }
        coordinator.orderWindow = window
        let report = await coordinator.run((0..<8).map { ScanTask(input: $0, job: "hold") })
        #expect(report.completed == 8)
        return seen.withLock { $0 }
    }

    @Test func noSectorStartsAWindowPastTheOldestUnfinishedOne() async throws {
        let seen = try await run(window: 4)
        let started4 = try #require(seen.firstIndex(of: .started(4)))
        let completed0 = try #require(seen.firstIndex(of: .completed(0)))
        #expect(started4 > completed0)
    }

    @Test func withoutAWindowFreeSlotsTakeNewSectorsAtOnce() async throws {
        let seen = try await run(window: nil)
        let started4 = try #require(seen.firstIndex(of: .started(4)))
        let completed0 = try #require(seen.firstIndex(of: .completed(0)))
        #expect(started4 < completed0)
    }
}
