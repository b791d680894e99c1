import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

/// The one timer: actions at their deadlines, in deadline order, never when cancelled (on a
/// `ManualClock`, to the exact instant); the real clock's thread: the wake-up when an earlier
/// deadline comes in, `sleep(until:)` and its cancellation. Each real-clock test uses a timer of
/// its own (its thread lives as long as the process), so what it sees pending is its own; one
/// uses the shared timer, as the product does.
@Suite(.timeLimit(.minutes(3)))
struct DeadlineTimerTests {
    typealias Instant = ContinuousClock.Instant

    /// What "at once" and "soon after" allow: generous, for the full test run shares two cores
    /// with other work (the pool stalled for up to 4 s at a load average of 12; with five other
    /// test runs on the machine, a load average of 25, a passed deadline took 25 s under the
    /// thread sanitizer). A wrong timer waits for a 60 s deadline, or for ever.
    let soon: Duration = .seconds(30)

    /// What ran, in the order it ran, with when; awaitable by count.
    final class Runs: Sendable {
        private struct State {
            var runs: [(label: Int, at: Instant)] = []
            var waiters: [(count: Int, signal: AsyncSignal<Void>)] = []
        }
        private let state = Locked(State())

        func record(_ label: Int, at now: Instant = .now) {
            let ready = state.withLock { state -> [AsyncSignal<Void>] in
                state.runs.append((label, now))
                let count = state.runs.count
                defer { state.waiters.removeAll { $0.count <= count } }
                return state.waiters.filter { $0.count <= count }.map(\.signal)
            }
            for signal in ready { signal.fulfil(()) }
        }

        var all: [(label: Int, at: Instant)] { state.withLock { $0.runs } }
        var labels: [Int] { all.map(\.label) }

        /// Returns once `count` actions have run; throws `TimeoutError` after `limit`.
        func wait(for count: Int, upTo limit: Duration = .seconds(10)) async throws {
            let signal = AsyncSignal<Void>()
            let reached = state.withLock { state in
                if state.runs.count >= count { return true }
                state.waiters.append((count, signal))
                return false
            }
            if reached { return }
            try await withTimeout(limit) { await signal.value }
        }
    }

    /// Schedules a marker at `deadline` and returns when it ran; throws after `limit`.
    @discardableResult
    func runMarker(on timer: DeadlineTimer, at deadline: Instant, upTo limit: Duration = .seconds(10)) async throws -> Instant {
        let ran = AsyncSignal<Instant>()
        timer.schedule(at: deadline) { ran.fulfil(.now) }
        return try await withTimeout(limit) { await ran.value }
    }

    @Test func actionsRunAtTheirDeadlinesInDeadlineOrderWhateverOrderTheyCameIn() {
        let clock = ManualClock(), runs = Runs()
        let start = clock.now
        var random = SeededRandom(seed: 13)
        var deadlines: [Int: Instant] = [:]
        for offset in (0..<50).shuffled(using: &random) {
            let deadline = start + .milliseconds(2 * offset)
            deadlines[offset] = deadline
            clock.schedule(at: deadline) { runs.record(offset, at: clock.now) }
        }
        // Deadlines at 0 ms run as they are scheduled; up to 49 ms, those up to 48 ms.
        #expect(runs.labels == [0])
        clock.advance(by: .milliseconds(49))
        #expect(runs.labels == Array(0..<25))
        clock.advance(by: .milliseconds(51))
        #expect(runs.labels == Array(0..<50))
        for (label, at) in runs.all {
            #expect(at == deadlines[label], "action \(label) ran at \(at - start), not at its deadline")
        }
        #expect(clock.now == start + .milliseconds(100))
    }

    @Test func aCancelledActionNeverRunsAndCancelSaysWhetherItWasStillPending() {
        let clock = ManualClock(), runs = Runs()
        let now = clock.now
        let cancelled = clock.schedule(at: now + .milliseconds(300)) { runs.record(1) }
        let kept = clock.schedule(at: now + .milliseconds(600)) { runs.record(2) }
        #expect(clock.cancel(cancelled))
        #expect(!clock.cancel(cancelled), "a second cancel finds nothing")
        #expect(clock.pendingDeadlines == [now + .milliseconds(600)])
        clock.advance(by: .milliseconds(599))
        #expect(runs.labels.isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(runs.labels == [2])
        #expect(!clock.cancel(kept), "it has run")
        clock.advance(by: .seconds(60))
        #expect(runs.labels == [2])
    }

    /// An action scheduled by an action runs in the same advance when it falls due within it,
    /// in its place among the others.
    @Test func anAdvanceRunsWhatActionsScheduleInDeadlineOrder() {
        let clock = ManualClock(), runs = Runs()
        let start = clock.now
        clock.schedule(at: start + .milliseconds(10)) {
            runs.record(1, at: clock.now)
            clock.schedule(after: .milliseconds(5)) { runs.record(3, at: clock.now) }
        }
        clock.schedule(at: start + .milliseconds(12)) { runs.record(2, at: clock.now) }
        clock.schedule(at: start + .milliseconds(20)) { runs.record(4, at: clock.now) }
        clock.advance(by: .milliseconds(20))
        #expect(runs.labels == [1, 2, 3, 4])
        #expect(runs.all.map { $0.at - start } == [.milliseconds(10), .milliseconds(12), .milliseconds(15), .milliseconds(20)])
    }

    /// Sleeps on a manual clock end when it is advanced past them, in deadline order, and not
    /// before; a cancelled one throws at once.
    @Test func sleepsOnAManualClockEndInDeadlineOrderWhenItIsAdvanced() async throws {
        let clock = ManualClock(), runs = Runs()
        let start = clock.now
        let sleepers = (1...3).map { i in
            Task {
                try await clock.sleep(until: start + .seconds(i))
                runs.record(i, at: clock.now)
            }
        }
        for i in 1...3 { await clock.waitUntilPending(at: start + .seconds(i)) }
        clock.advance(by: .milliseconds(1999))
        try await runs.wait(for: 1)
        #expect(runs.labels == [1])
        #expect(clock.pendingDeadlines == [start + .seconds(2), start + .seconds(3)])
        sleepers[2].cancel()
        await #expect(throws: CancellationError.self) { try await sleepers[2].value }
        #expect(clock.pendingDeadlines == [start + .seconds(2)])
        clock.advance(by: .milliseconds(1))
        try await sleepers[1].value
        #expect(runs.labels == [1, 2])
        // A deadline that has come ends a sleep at once.
        try await clock.sleep(until: start)
    }

    @Test func aPastDeadlineRunsAtOnceEvenWhileTheThreadWaitsForAFarOne() async throws {
        let timer = DeadlineTimer(), runs = Runs()
        let far = timer.schedule(at: .now + .seconds(60)) { runs.record(0) }
        defer { timer.cancel(far) }
        for round in 1...20 {
            let clock = ContinuousClock(), start = clock.now
            let ran = try await runMarker(on: timer, at: start - .seconds(round), upTo: soon)
            #expect(ran - start < soon)
        }
        #expect(runs.labels.isEmpty)
    }

    /// The thread waits for the far deadline; a nearer one must wake it (the signal path).
    @Test func anEarlierDeadlineScheduledWhileTheThreadWaitsForALaterOneRunsOnTime() async throws {
        let timer = DeadlineTimer()
        let clock = ContinuousClock()
        for _ in 0..<20 {
            let far = timer.schedule(at: clock.now + .seconds(60)) {}
            // Something due now: once it has run, the thread goes back to wait for the far one.
            try await runMarker(on: timer, at: clock.now)
            let deadline = clock.now + .milliseconds(5)
            let ran = try await runMarker(on: timer, at: deadline, upTo: soon)
            #expect(ran >= deadline)
            #expect(ran - deadline < soon)
            #expect(timer.cancel(far))
        }
    }

    /// Removing entries from the middle of the queue keeps its order: the kept half of a
    /// thousand random deadlines runs in deadline order, the cancelled half never.
    @Test func theKeptHalfOfAThousandRandomDeadlinesRunsInOrderAndTheCancelledHalfNever() {
        let clock = ManualClock(), runs = Runs()
        var random = SeededRandom(seed: 42)
        let start = clock.now + .seconds(10)
        // Distinct deadlines over 200 ms, in a random order.
        let offsets = (0..<1_000).map { $0 * 200 }.shuffled(using: &random)
        var tickets: [(offset: Int, ticket: TimerTicket)] = []
        for offset in offsets {
            tickets.append((offset, clock.schedule(at: start + .microseconds(offset)) { runs.record(offset, at: clock.now) }))
        }
        var kept: [Int] = []
        for (offset, ticket) in tickets.shuffled(using: &random) {
            if Bool.random(using: &random) {
                #expect(clock.cancel(ticket), "\(offset) was pending")
            } else {
                kept.append(offset)
            }
        }
        #expect(clock.pendingDeadlines == kept.sorted().map { start + .microseconds($0) })
        clock.advance(by: .seconds(11))
        #expect(runs.labels == kept.sorted())
        #expect(runs.all.allSatisfy { $0.at == start + .microseconds($0.label) }, "each at its deadline")
        #expect(clock.pendingDeadlines.isEmpty)
    }

    /// Thousands of schedule/cancel pairs from many tasks at once, between actions that must
    /// run: the cancelled never run, the others run once each, in deadline order. (On a manual
    /// clock, which stands still meanwhile: only `cancel` can take an action back, however late
    /// a busy pool runs a task.)
    @Test func thousandsOfConcurrentScheduleAndCancelPairsLeaveNothingThatFires() async throws {
        let clock = ManualClock(), runs = Runs()
        let tasks = 16, pairs = 500
        let start = clock.now
        let results = await withTaskGroup(of: (cancelled: Int, kept: [Int: Instant]).self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var cancelled = 0, kept: [Int: Instant] = [:]
                    for i in 0..<pairs {
                        let label = i * tasks + task
                        let deadline = start + .microseconds(1 + label)
                        let ticket = clock.schedule(at: deadline) { runs.record(-1 - label) }
                        if clock.cancel(ticket) { cancelled += 1 }
                        if i.isMultiple(of: 10) {
                            clock.schedule(at: deadline) { runs.record(label, at: clock.now) }
                            kept[label] = deadline
                        }
                    }
                    return (cancelled, kept)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.map(\.cancelled).reduce(0, +) == tasks * pairs)
        let kept = results.reduce(into: [Int: Instant]()) { $0.merge($1.kept) { first, _ in first } }
        #expect(clock.pendingDeadlines == kept.values.sorted())
        clock.advance(by: .seconds(1))
        let labels = runs.labels
        #expect(labels.count == kept.count && Set(labels) == Set(kept.keys), "only the kept ran, once each")
        #expect(labels == kept.keys.sorted(), "in deadline order")
        #expect(runs.all.allSatisfy { $0.at == kept[$0.label] }, "each at its deadline")
    }

    /// Actions run on the timer thread outside its lock: one may schedule and cancel others.
    @Test func anActionMayScheduleAndCancelOtherActions() async throws {
        let timer = DeadlineTimer(), runs = Runs()
        let later = timer.schedule(at: .now + .seconds(60)) { runs.record(3) }
        timer.schedule(at: .now) {
            runs.record(1)
            let cancelled = timer.cancel(later)
            timer.schedule(at: .now) { runs.record(cancelled ? 2 : -2) }
        }
        // Run under the timer's lock, these would deadlock.
        try await runs.wait(for: 2, upTo: soon)
        #expect(runs.labels == [1, 2])
        #expect(!timer.cancel(later), "the action cancelled it")
    }

    @Test func sleepReturnsNotBeforeItsDeadlineAndSoonAfter() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        try await DeadlineTimer.shared.sleep(until: start + .milliseconds(10))
        let slept = clock.now - start
        #expect(slept >= .milliseconds(10) && slept < soon, "slept \(slept)")
        // Several at once, on a timer of their own, each to its own deadline.
        let timer = DeadlineTimer()
        let lateness = try await withThrowingTaskGroup(of: Duration.self) { group in
            for i in 0..<20 {
                group.addTask {
                    let deadline = clock.now + .milliseconds(5 * (20 - i))
                    try await timer.sleep(until: deadline)
                    return clock.now - deadline
                }
            }
            return try await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        #expect(lateness.allSatisfy { $0 >= .zero && $0 < soon }, "\(lateness)")
    }

    /// A deadline with a tolerance moves to the next step of a grid (the tolerance, at most
    /// 1 ms): never earlier, less than a step later, and deadlines within one step meet.
    @Test func aToleranceMovesADeadlineOntoAGridNeverEarlierAndLessThanAStepLater() {
        let start = ContinuousClock.now + .seconds(1)
        // 4 ms of deadlines, 397 ns apart (and a third of a nanosecond off the grid of whole ones).
        let deadlines = (0..<10_000).map { start + .nanoseconds($0 * 397) + .nanoseconds(1) / 3 }
        for tolerance in [Duration.milliseconds(1), .seconds(5)] {
            let moved = deadlines.map { DeadlineTimer.coalesced($0, tolerance: tolerance) }
            let offsets = zip(deadlines, moved).map { $1 - $0 }
            #expect(offsets.allSatisfy { $0 >= .zero && $0 < .milliseconds(1) }, "from \(offsets.min()!) to \(offsets.max()!)")
            #expect((4...5).contains(Set(moved).count), "\(Set(moved).count) instants")
        }
        let fine = deadlines.map { DeadlineTimer.coalesced($0, tolerance: .microseconds(10)) }
        #expect(zip(deadlines, fine).allSatisfy { $1 >= $0 && $1 - $0 < .microseconds(10) })
        #expect((397...402).contains(Set(fine).count), "\(Set(fine).count) instants")
        for tolerance in [Duration.zero, .nanoseconds(999), .seconds(-1)] {
            #expect(DeadlineTimer.coalesced(start, tolerance: tolerance) == start)
        }
    }

    /// Sleeps with a tolerance that end within one step are one deadline on the clock: one
    /// wake-up runs them all.
    @Test func sleepsWithAToleranceThatEndCloseTogetherShareOneDeadline() async throws {
        let clock = ManualClock()
        let base = DeadlineTimer.coalesced(clock.now + .seconds(1), tolerance: .milliseconds(1))
        let sleeps = (0..<50).map { index in
            Task { try await clock.sleep(until: base + .microseconds(10 * index) + .nanoseconds(1), tolerance: .milliseconds(1)) }
        }
        let shared = base + .milliseconds(1)
        try await awaitState(upTo: soon) { clock.pendingDeadlines.count == sleeps.count }
        #expect(Set(clock.pendingDeadlines) == [shared])
        clock.advance(by: shared - clock.now - .nanoseconds(1))
        #expect(clock.pendingDeadlines.count == sleeps.count, "none ends before the shared deadline")
        clock.advance(by: .nanoseconds(1))
        for sleep in sleeps { try await withTimeout(soon) { try await sleep.value } }
    }

    @Test func aSleepWhoseDeadlineHasPassedReturnsAtOnce() async throws {
        let timer = DeadlineTimer()
        let far = timer.schedule(at: .now + .seconds(60)) {}  // the thread waits for this one
        defer { timer.cancel(far) }
        let clock = ContinuousClock()
        for past in [Duration.zero, .milliseconds(1), .seconds(5)] {
            let start = clock.now
            try await withTimeout(soon) { try await timer.sleep(until: start - past) }
            #expect(clock.now - start < soon)
        }
    }

    @Test func aSleepOfACancelledTaskThrowsCancellationErrorAtOnce() async throws {
        let timer = DeadlineTimer()
        let clock = ContinuousClock(), start = clock.now
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timer.sleep(until: clock.now + .seconds(60))
        }
        await #expect(throws: CancellationError.self) {
            try await withTimeout(soon) { try await task.value }
        }
        #expect(clock.now - start < soon)
    }

    /// Cancelled at once after it began (before or during its wait, whichever comes): each
    /// sleep throws promptly, none is left hanging.
    @Test func aSleepThrowsCancellationErrorPromptlyWhenItsTaskIsCancelledWhileItWaits() async throws {
        let timer = DeadlineTimer()
        let clock = ContinuousClock()
        for round in 0..<50 {
            let started = Flag()
            let task = Task {
                started.set()
                try await timer.sleep(until: clock.now + .seconds(60))
            }
            try await started.wait(upTo: .seconds(5))
            // Half the rounds let it settle into its wait first.
            if round.isMultiple(of: 2) { await Task.yield() }
            let cancelled = clock.now
            task.cancel()
            await #expect(throws: CancellationError.self) {
                try await withTimeout(soon) { try await task.value }
            }
            #expect(clock.now - cancelled < soon)
        }
    }
}
