import SkyNet
import SkyNetRuntime
import Testing

/// `Guarded`, the one lock and wait primitive: waits end on a change or at their deadline,
/// never before, and the lock is really held. Blocking waits run on threads of their own.
@Suite(.timeLimit(.minutes(1))) struct GuardedTests {
    @Test func aWaitWhoseConditionAlreadyHoldsReturnsAtOnceWithoutTimingOut() async throws {
        let state = Guarded(3)
        let (value, timedOut) = try await onOwnThread(named: "guarded-test") {
            state.wait(while: { $0 < 3 }, deadline: .now + .seconds(60)) { value, timedOut in (value, timedOut) }
        }
        #expect(value == 3 && !timedOut)
    }

    @Test func aChangeFromAnotherThreadEndsAWaitThatHasNoDeadline() async throws {
        let state = Guarded(0)
        let asked = AsyncSignal<Void>()
        async let seen = onOwnThread(named: "guarded-test") {
            state.wait(while: { value in
                asked.fulfil(())  // under the lock: the next change finds the waiter asleep
                return value < 5
            }) { value, timedOut in (value, timedOut) }
        }
        await asked.value
        for _ in 1...5 { state.withLock { $0 += 1 } }
        let (value, timedOut) = try await seen
        #expect(value == 5 && !timedOut)
    }

    @Test func aWaitThatNothingEndsTimesOutAtItsDeadlineAndNotBefore() async throws {
        let state = Guarded(false)
        let start = ContinuousClock.now
        let timedOut = try await onOwnThread(named: "guarded-test") {
            state.wait(while: { !$0 }, deadline: start + .milliseconds(50)) { _, timedOut in timedOut }
        }
        #expect(timedOut)
        #expect(ContinuousClock.now - start >= .milliseconds(50))
    }

    @Test func theLockIsHeldForTheWholeBodyAndWithLockIfAvailableSeesIt() async throws {
        let state = Guarded(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await onOwnThread(named: "guarded-test") {
                        // A read-modify-write that a missing lock would lose increments of.
                        for _ in 0..<10_000 { state.withLock { let value = $0; $0 = value + 1 } }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(state.withLock { $0 } == 40_000)
        let busy = try await onOwnThread(named: "guarded-test") {
            state.withLock { _ in state.withLockIfAvailable { _ in true } }
        }
        // From the thread that holds it, a default (non-recursive) mutex's trylock fails.
        #expect(busy == nil)
        #expect(state.withLockIfAvailable { $0 } == 40_000)
    }
}
