import Testing
@testable import SkyNet

@Suite(.timeLimit(.minutes(1)))
struct TimeoutTaskTests {
    struct Boom: Error, Equatable {}

    @Test func returnsTheOperationsValueWhenItIsFaster() async throws {
        let task = TimeoutTask(timeout: .seconds(5)) { 42 }
        #expect(try await task.value == 42)
    }

    @Test func throwsTimeoutErrorAndCancelsASlowOperation() async throws {
        let operationCancelled = Flag()
        let task = TimeoutTask(timeout: .milliseconds(50)) { () async throws -> Int in
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                operationCancelled.set()
                throw error
            }
            return 1
        }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: TimeoutError.self) { try await task.value }
        #expect(clock.now - start < .seconds(10))
        try await operationCancelled.wait(upTo: .seconds(10))
        #expect(TimeoutError().description == "The operation timed out.")
    }

    @Test func passesTheOperationsOwnErrorOn() async throws {
        let task = TimeoutTask<Int>(timeout: .seconds(5)) { throw Boom() }
        await #expect(throws: Boom.self) { try await task.value }
    }

    @Test func cancelResumesWithCancellationError() async throws {
        let task = TimeoutTask(timeout: .seconds(30)) { () async throws -> Int in
            try await Task.sleep(for: .seconds(30))
            return 1
        }
        let waiter = Task { try await task.value }
        await task.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test func cancellingTheAwaitingTaskEndsTheRace() async throws {
        let task = TimeoutTask(timeout: .seconds(30)) { () async throws -> Int in
            try await Task.sleep(for: .seconds(30))
            return 1
        }
        let waiter = Task { try await task.value }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    /// The operation and the timer finish at the same moment, a thousand times: each race
    /// resumes once (a second resume of a checked continuation would trap) with one of the two.
    @Test func resumesExactlyOnceWhenBothFinishTogether() async throws {
        var values = 0, timeouts = 0
        for _ in 0..<1000 {
            let task = TimeoutTask(timeout: .zero) { 7 }
            do {
                #expect(try await task.value == 7)
                values += 1
            } catch is TimeoutError {
                timeouts += 1
            }
        }
        #expect(values + timeouts == 1000)
    }
}
