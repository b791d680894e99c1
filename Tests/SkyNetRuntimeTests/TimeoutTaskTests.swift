import Testing
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport

@Suite(.timeLimit(.minutes(3)))
struct TimeoutTaskTests {
    struct Boom: Error, Equatable {}

    @Test func returnsTheOperationsValueWhenItIsFaster() async throws {
        let task = TimeoutTask(timeout: .seconds(5)) { 42 }
        #expect(try await task.value == 42)
    }

    /// On a manual clock: the time limit is pending from the start, nothing ends a moment
    /// before it, and at it the race ends with `TimeoutError` and the operation is cancelled.
    @Test func throwsTimeoutErrorAndCancelsASlowOperation() async throws {
        let clock = ManualClock(), start = clock.now
        let operationCancelled = Flag()
        let task = TimeoutTask(timeout: .milliseconds(50), clock: clock) { () async throws -> Int in
            do {
                try await clock.sleep(for: .seconds(300))
            } catch {
                operationCancelled.set()
                throw error
            }
            return 1
        }
        let waiter = Task { try await task.value }
        await clock.waitUntilPending(at: start + .milliseconds(50))
        await clock.waitUntilPending(at: start + .seconds(300))
        clock.advance(by: .milliseconds(49))
        #expect(clock.pendingDeadlines == [start + .milliseconds(50), start + .seconds(300)])
        clock.advance(by: .milliseconds(1))
        await #expect(throws: TimeoutError.self) { try await waiter.value }
        try await operationCancelled.wait(upTo: .seconds(60))
        #expect(clock.pendingDeadlines.isEmpty, "the operation's sleep ended with it")
    }

    @Test func passesTheOperationsOwnErrorOn() async throws {
        let task = TimeoutTask<Int>(timeout: .seconds(5)) { throw Boom() }
        await #expect(throws: Boom.self) { try await task.value }
    }

    /// An operation that signals when it runs and when it is cancelled, and otherwise sleeps.
    func slowOperation(started: Flag, cancelled: Flag) -> @Sendable () async throws -> Int {
        {
            started.set()
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                cancelled.set()
                throw error
            }
            return 1
        }
    }

    @Test func cancelResumesWithCancellationErrorAndCancelsTheOperation() async throws {
        let started = Flag(), cancelled = Flag()
        let task = TimeoutTask(timeout: .seconds(30), operation: slowOperation(started: started, cancelled: cancelled))
        let waiter = Task { try await task.value }
        try await started.wait(upTo: .seconds(60))
        await task.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        // The slot it held is given back: the operation itself stopped, not only the wait.
        try await cancelled.wait(upTo: .seconds(60))
    }

    @Test func cancellingTheAwaitingTaskEndsTheRaceAndTheOperation() async throws {
        let started = Flag(), cancelled = Flag()
        let task = TimeoutTask(timeout: .seconds(30), operation: slowOperation(started: started, cancelled: cancelled))
        let waiter = Task { try await task.value }
        try await started.wait(upTo: .seconds(60))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        try await cancelled.wait(upTo: .seconds(60))
    }

    @Test func aSecondAwaitGetsTheSameOutcomeWithoutRunningTheOperationAgain() async throws {
        let runs = Counter()
        let task = TimeoutTask(timeout: .seconds(30)) { () async throws -> Int in
            runs.increment()
            return runs.value * 10
        }
        #expect(try await task.value == 10)
        #expect(try await task.value == 10)
        #expect(runs.value == 1)
    }

    /// The operation and the timer finish at the same moment, a thousand times: each race
    /// resumes once (a second resume of a checked continuation would trap) with one of the two,
    /// and every later await sees that same outcome.
    @Test func resumesExactlyOnceWhenBothFinishTogether() async throws {
        for _ in 0..<1000 {
            let task = TimeoutTask(timeout: .zero) { 7 }
            let first = await outcome(of: task)
            let second = await outcome(of: task)
            #expect(first == second)
            #expect(first == "7" || first == "timeout", "\(first)")
        }
    }

    private func outcome(of task: TimeoutTask<Int>) async -> String {
        do { return String(try await task.value) } catch is TimeoutError { return "timeout" } catch { return "\(error)" }
    }
}
