import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetMetrics
@testable import SkyNetRuntime
@testable import SkyNetScheduler
@testable import SkyNetWork
import Testing

/// A coordinator counts every attempt in `Coordinator.metrics`: completed, failed (each
/// re-run's failed attempt too) and busy bounces, which are not timed.
@Suite(.timeLimit(.minutes(1)))
struct CoordinatorMetricsTests {
    func makeTasks(_ count: Int) -> [ScanTask] {
        (0..<count).map { ScanTask(input: $0, duration: 0) }
    }

    @Test func completedAndFailedAttemptsAreCounted() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(capacity: 4, api: UnreliableAPI(failingEvery: 3)), capacity: 4)
        let metrics = TaskMetrics(jobs: [JobRegistry.scan])
        var coordinator = Coordinator(systems: systems, maxAttempts: 10)
        coordinator.metrics = metrics
        let report = await coordinator.run(makeTasks(30))
        #expect(report.completed == 30)
        #expect(report.reruns > 0)
        #expect(metrics.count(job: "scan", outcome: .completed) == 30)
        #expect(metrics.count(job: "scan", outcome: .failed) == report.reruns + report.gaveUp)
        let seconds = metrics.families()[1].histograms[0].counts
        #expect(seconds.count == UInt64(30 + report.reruns + report.gaveUp))
    }

    @Test func busyBouncesAreCountedButNotTimed() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 0), capacity: 0)
        await systems.add(BusySystem(name: "beta", busyAnswers: 5), capacity: 1)
        let metrics = TaskMetrics(jobs: [JobRegistry.scan])
        var coordinator = Coordinator(systems: systems, maxAttempts: 1)
        coordinator.busyRest = BusyBackoff(first: .microseconds(100), most: .milliseconds(1))
        coordinator.metrics = metrics
        let report = await coordinator.run(makeTasks(1))
        #expect(report.completed == 1)
        #expect(metrics.count(job: "scan", outcome: .busy) == 5)
        #expect(metrics.count(job: "scan", outcome: .completed) == 1)
        #expect(metrics.families()[1].histograms[0].counts.count == 1)
    }
}
