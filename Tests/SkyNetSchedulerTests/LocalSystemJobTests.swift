import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// `LocalSystem` runs the jobs of its registry, and only those, each within its deadline.
@Suite(.timeLimit(.minutes(3)))
struct LocalSystemJobTests {
    func registry(_ register: (inout JobRegistry) throws -> Void) rethrows -> JobRegistry {
        var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
        try register(&jobs)
        return jobs
    }

    @Test func runsAClosureJobWithTheTasksInputAndSector() async throws {
        let jobs = try registry { try $0.register("echo") { request in "\(request.sector):\(request.input)" } }
        let system = LocalSystem(capacity: 2, jobs: jobs)
        let result = try await system.run(ScanTask(input: 7, job: "echo", text: "a b.txt"))
        #expect(result == "7:a b.txt")
        #expect(system.counters.completed == 1)
    }

    @Test func runsABlockingJobOffTheCooperativePool() async throws {
        let jobs = try registry {
            try $0.register("square", blocking: { request in
                // A blocking call: allowed here, because the job has a thread of its own.
                usleep(1000)
                return String(request.sector * request.sector)
            })
        }
        let system = LocalSystem(capacity: 8, jobs: jobs)
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for sector in 0..<8 { group.addTask { try await system.run(ScanTask(input: sector, job: "square")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == (0..<8).map { String($0 * $0) }.sorted())
    }

    @Test func keepsTheBuiltInScanByDefault() async throws {
        let system = LocalSystem(capacity: 1, api: UnreliableAPI(failingEvery: 0))
        #expect(system.jobs.names == ["scan"])
        #expect(try await system.run(ScanTask(input: 12, duration: 0)) == "12")
    }

    @Test func refusesAJobItDoesNotHaveWithUnknownJob() async throws {
        let system = LocalSystem(name: "alpha", capacity: 1, api: UnreliableAPI(failingEvery: 0))
        await #expect(throws: ScanFailure(code: "unknown-job", message: "alpha has no job 'sum'")) {
            try await system.run(ScanTask(input: 0, job: "sum", text: "x"))
        }
        // Nothing ran, so nothing counts.
        #expect(system.counters == SystemCounters())
    }

    @Test func stopsAJobAtItsDeadlineAndFreesTheSlotOnlyWhenTheWorkEnded() async throws {
        let started = Flag(), ended = Flag()
        let jobs = try registry {
            try $0.register("slow") { _ in
                started.set()
                defer { ended.set() }
                try await Task.sleep(for: .seconds(60))
                return "too late"
            }
        }
        let clock = ManualClock(), start = clock.now
        let system = LocalSystem(capacity: 1, jobs: jobs, clock: clock)
        let run = Task { try await system.run(ScanTask(input: 0, job: "slow", text: "x", timeout: 0.3)) }
        await clock.waitUntilPending(at: start + .milliseconds(300))
        try await started.wait(upTo: .seconds(60))
        clock.advance(by: .milliseconds(299))
        #expect(clock.pendingDeadlines == [start + .milliseconds(300)], "not stopped a moment before its deadline")
        #expect(system.counters.running == 1)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: ScanFailure(code: "deadline", message: "stopped at its deadline of 0.3 s")) {
            try await run.value
        }
        // The work had ended before the slot was given back and the failure thrown.
        #expect(ended.isSet)
        #expect(system.counters == SystemCounters(running: 0, completed: 0, failed: 1))
    }

    @Test func waitsForAJobThatTakesItsTimeToStopAfterTheDeadline() async throws {
        let stopped = Flag()
        let jobs = try registry {
            try $0.register("stubborn") { _ in
                // Cleans up slowly after being cancelled, as a command job does (SIGTERM, grace, reap).
                do { try await Task.sleep(for: .seconds(60)) } catch {}
                // An unstructured task does not inherit the cancellation: this wait really waits.
                await Task { try? await Task.sleep(for: .milliseconds(200)) }.value
                stopped.set()
                throw CancellationError()
            }
        }
        let system = LocalSystem(capacity: 1, jobs: jobs)
        await #expect(throws: ScanFailure.deadline(seconds: 0.2)) {
            try await system.run(ScanTask(input: 0, job: "stubborn", text: "x", timeout: 0.2))
        }
        #expect(stopped.isSet)
        #expect(system.counters.running == 0)
    }

    @Test func appliesTheDeadlineToTheBuiltInScanToo() async throws {
        let system = LocalSystem(capacity: 1, api: UnreliableAPI(failingEvery: 0))
        await #expect(throws: ScanFailure(code: "deadline", message: "stopped at its deadline of 1 s")) {
            try await system.run(ScanTask(input: 0, duration: 60, timeout: 1))
        }
    }

    @Test func aJobThatEndsBeforeItsDeadlineKeepsItsResult() async throws {
        let jobs = try registry { try $0.register("quick") { _ in "done" } }
        let system = LocalSystem(capacity: 1, jobs: jobs)
        #expect(try await system.run(ScanTask(input: 0, job: "quick", text: "x", timeout: 30)) == "done")
    }

    @Test(arguments: [nil, 30.0])
    func aCancelledTaskThrowsCancellationAfterItsWorkEnded(timeout: Double?) async throws {
        let started = Flag(), ended = Flag()
        let jobs = try registry {
            try $0.register("slow") { _ in
                started.set()
                defer { ended.set() }
                try await Task.sleep(for: .seconds(60))
                return "too late"
            }
        }
        let system = LocalSystem(capacity: 1, jobs: jobs)
        let run = Task { try await system.run(ScanTask(input: 0, job: "slow", text: "x", timeout: timeout)) }
        try await started.wait(upTo: .seconds(60))
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        #expect(ended.isSet)
        #expect(system.counters.running == 0)
    }
}
