import Testing
@testable import SkyNetRuntime
import SkyNetTestSupport

/// The blocking pool never runs more threads than its bound, however much work waits; work
/// waits its turn in order; idle threads end.
@Suite(.timeLimit(.minutes(1)))
struct BlockingPoolTests {
    @Test func fortyBlockedJobsRunOnThreeThreadsAndAllFinish() async throws {
        let pool = BlockingPool(named: "test-pool", maxThreads: 3, idleExit: .milliseconds(50))
        let gate = Guarded(false)
        let done = Locked(0)
        let mostBusy = Locked((now: 0, most: 0))
        for _ in 0..<40 {
            pool.execute {
                mostBusy.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                gate.wait(while: { !$0 }) { _, _ in }
                mostBusy.withLock { $0.now -= 1 }
                done.withLock { $0 += 1 }
            }
        }
        try await awaitState(upTo: .seconds(10)) { mostBusy.withLock { $0.now } == 3 }
        #expect(pool.threadCount == 3)
        gate.withLock { $0 = true }
        try await awaitState(upTo: .seconds(10)) { done.withLock { $0 } == 40 }
        #expect(mostBusy.withLock { $0.most } == 3)
        // Idle for their 50 ms, the threads end.
        try await awaitState(upTo: .seconds(10)) { pool.threadCount == 0 }
    }

    @Test func oneThreadRunsJobsInTheOrderGiven() async throws {
        let pool = BlockingPool(named: "test-pool", maxThreads: 1)
        let order = Locked<[Int]>([])
        for index in 0..<500 { pool.execute { order.withLock { $0.append(index) } } }
        try await awaitState(upTo: .seconds(10)) { order.withLock { $0.count } == 500 }
        #expect(order.withLock { $0 } == Array(0..<500))
    }

    @Test func aResultComesBackThroughThePool() async throws {
        let value = try await onBlockingPool { 6 * 7 }
        #expect(value == 42)
        await #expect(throws: SocketLikeFailure.self) { try await onBlockingPool { throw SocketLikeFailure() } }
    }
}

private struct SocketLikeFailure: Error {}
