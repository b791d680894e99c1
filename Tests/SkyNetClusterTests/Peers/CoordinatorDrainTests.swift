import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetMetrics
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A coordinator whose peer drains mid-scan: the peer gets no new work, and the
/// tasks it cancels at its drain timeout run elsewhere at once, at no attempt's cost.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CoordinatorDrainTests {
    let linksTests = PeerLinksJobTests()

    func startNode(_ name: String) async throws -> Node {
        var options = Node.Options(name: name)
        options.capacity = 2
        options.failingEvery = 0
        try DrainGate.register(in: &options.jobs)
        return try await Node.start(options)
    }

    @Test func tasksADrainedPeerCancelsCompleteElsewhereWithNoFailure() async throws {
        let gate = try DrainGate.make(4)
        defer { gate.remove() }
        let beta = try await startNode("beta"), gamma = try await startNode("gamma")
        var settings = PeerLinks.Settings(capacity: 2, timeout: .seconds(5), job: "hold", jobSummary: "cat {}")
        settings.refusalRetryDelay = .milliseconds(100)
        try await linksTests.withLinks(to: [beta, gamma], settings: settings) { _, systems, events in
            try await awaitState(upTo: .seconds(60)) { await systems.names.count == 2 }
            let scanEvents = Locked<[ScanEvent]>([])
            var coordinator = Coordinator(systems: systems) { event in scanEvents.withLock { $0.append(event) } }
            let metrics = TaskMetrics(jobs: ["hold"])
            coordinator.metrics = metrics
            let scan = Task { await coordinator.run((0..<4).map { gate.task($0) }) }
            defer { scan.cancel() }
            try await awaitState(upTo: .seconds(60)) {
                // Running on the nodes, not only reserved here: the drain must cancel them.
                beta.system.counters.running == 2 && gamma.system.counters.running == 2
            }

            // beta drains: its two tasks are cancelled after 0.2 s and wait for a slot of gamma.
            let drain = Task { await beta.drain(within: .milliseconds(200)) }
            try await events.waitFor(upTo: .seconds(60)) {
                if case .draining("beta", _) = $0 { true } else { false }
            }
            try await withTimeout(.seconds(60)) { await drain.value }
            #expect(beta.phase == .stopped)
            // Every FIFO at once: the re-run tasks open theirs only once gamma has room.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<4 { group.addTask { try await gate.release(index, within: .seconds(60)) } }
                try await group.waitForAll()
            }
            let report = try await withTimeout(.seconds(60)) { await scan.value }

            #expect(report.completed == 4)
            #expect(report.gaveUp == 0)
            #expect(report.reruns == 0)
            #expect(report.systems["beta"]?.failed ?? 0 == 0)
            #expect(report.systems["gamma"]?.completed == 4)
            let all = scanEvents.withLock { $0 }
            #expect(!all.contains { if case .rerun = $0 { true } else { false } })
            let completed = all.compactMap { event -> (Int, String)? in
                if case .completed(_, let result, _, _, let attempt, _) = event { (attempt, result) } else { nil }
            }
            #expect(completed.map(\.0) == [1, 1, 1, 1])
            // The two tasks beta gave back count as `cancelled` attempts, none as `failed`.
            #expect(metrics.count(job: "hold", outcome: .cancelled) == 2)
            #expect(metrics.count(job: "hold", outcome: .failed) == 0)
            #expect(metrics.count(job: "hold", outcome: .completed) == 4)
            // Every attempt that ran is timed, the two given back too: `_count` equals the
            // total of the outcomes but `busy` (it left out the two).
            #expect(metrics.timedCount(job: "hold") == 6)
            #expect(Set(completed.map(\.1)) == Set((0..<4).map { "released \($0)" }))
            #expect(events.lines.contains { $0.hasPrefix("[Cluster] Draining: beta (it is stopping; its running tasks may finish within 0.2 s)") })
        }
    }
}
