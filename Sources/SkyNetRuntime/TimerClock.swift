/// The time SkyNet's deadlines, timeouts, sleeps and ticks are measured in, and the one way
/// they are kept: actions scheduled at instants, and sleeps built on them.
///
/// `DeadlineTimer.shared` is the real clock (monotonic, one thread of its own); tests give a
/// `ManualClock` instead and move time themselves. Types that keep time take a clock in their
/// initialiser, defaulting to the real one.
package protocol TimerClock: AnyObject, Sendable {
    /// The current instant on this clock.
    var now: ContinuousClock.Instant { get }

    /// Runs `action` at `deadline` (at once, if it has passed), unless cancelled first. Actions
    /// run one at a time, outside the clock's lock: they must be short and never block (resume
    /// a continuation, fail a pending request); they may schedule and cancel others.
    @discardableResult
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket

    /// Forgets a pending action; false when it has already run (or is running) or was cancelled.
    @discardableResult
    func cancel(_ ticket: TimerTicket) -> Bool
}

/// What `schedule` returns, for `cancel`: the pending entry itself (which knows where it is
/// in its queue).
package struct TimerTicket: Sendable, Hashable {
    let entry: TimerQueue.Entry

    package static func == (a: TimerTicket, b: TimerTicket) -> Bool { a.entry === b.entry }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(entry)) }
}

extension TimerClock {
    /// Runs `action` once `delay` has passed on this clock.
    @discardableResult
    package func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        schedule(at: now + delay, action)
    }

    /// Suspends the caller for `duration` on this clock; throws `CancellationError` (at once)
    /// when the calling task is cancelled.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// Suspends the caller until `deadline` on this clock; throws `CancellationError` (at once)
    /// when the calling task is cancelled.
    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        let sleeper = Sleeper()
        let ticket = schedule(at: deadline) { sleeper.wake(fired: true) }
        let fired = await withTaskCancellationHandler { await sleeper.woken() } onCancel: { sleeper.wake(fired: false) }
        guard fired else {
            cancel(ticket)
            throw CancellationError()
        }
    }

    /// Suspends the caller until `deadline`, or a little after it (`coalesced`), so that sleeps
    /// ending close together wake together; throws `CancellationError` (at once) when the calling
    /// task is cancelled.
    package func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration) async throws {
        try await sleep(until: Self.coalesced(deadline, tolerance: tolerance))
    }

    /// `deadline` moved to the next step of a grid of `tolerance` (at most 1 ms; below 1 µs,
    /// `deadline` itself): never earlier, less than one step later. Deadlines that fall in the
    /// same step become one instant, which the timer runs in one wake-up: a node whose 40,000
    /// scans of 1 s started over a second otherwise woke for almost each one (W15).
    package static func coalesced(_ deadline: ContinuousClock.Instant, tolerance: Duration) -> ContinuousClock.Instant {
        let offset = deadline - TimerGrid.origin
        guard tolerance >= .microseconds(1), offset > .zero, offset < .seconds(1_000_000_000) else { return deadline }
        let step = min(tolerance, .milliseconds(1)).components.attoseconds / 1_000_000_000
        let (seconds, attoseconds) = offset.components
        // Rounded up to whole nanoseconds first: the grid point is never before the deadline.
        let nanoseconds = seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
        let steps = (nanoseconds + step - 1) / step
        return TimerGrid.origin + .nanoseconds(steps * step)
    }
}

/// One sleep of `sleep(until:)`: whichever comes first, its deadline (true) or its task's
/// cancellation (false), wakes it. Not an `AsyncSignal`: a node's every running scan sleeps
/// (40,000 at once in W15), and this is one object with one waiter and no lists.
private final class Sleeper: Sendable {
    private enum State {
        case asleep
        case waiting(UnsafeContinuation<Bool, Never>)
        case woken(fired: Bool)
    }

    private let state = Locked(State.asleep)

    /// Wakes the sleeper, once; later calls are ignored.
    func wake(fired: Bool) {
        let waiter = state.withLock { state -> UnsafeContinuation<Bool, Never>? in
            switch state {
            case .asleep:
                state = .woken(fired: fired)
                return nil
            case .waiting(let waiter):
                state = .woken(fired: fired)
                return waiter
            case .woken:
                return nil
            }
        }
        // Resumed once: the state leaves `waiting` under the lock that put it there.
        waiter?.resume(returning: fired)
    }

    /// Whether the deadline woke it (true) or the cancellation (false), once one has.
    func woken() async -> Bool {
        await withUnsafeContinuation { continuation in
            let woken = state.withLock { state -> Bool? in
                if case .woken(let fired) = state { return fired }
                state = .waiting(continuation)
                return nil
            }
            if let woken { continuation.resume(returning: woken) }
        }
    }
}

/// Where the grid of coalesced deadlines starts: any fixed instant of the process will do.
private enum TimerGrid {
    static let origin = ContinuousClock.now
}
