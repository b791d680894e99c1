/// The time SkyNet's deadlines, timeouts, sleeps and ticks are measured in, and the one way
/// they are kept: actions scheduled at instants, and sleeps built on them.
///
/// `DeadlineTimer.shared` is the real clock (monotonic, one thread of its own); tests give a
/// `ManualClock` instead and move time themselves. Types that keep time take a clock in their
/// initialiser, defaulting to the real one.
public protocol TimerClock: AnyObject, Sendable {
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

/// What `schedule` returns, for `cancel`.
public struct TimerTicket: Sendable, Hashable {
    let id: UInt64
}

extension TimerClock {
    /// Runs `action` once `delay` has passed on this clock.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        schedule(at: now + delay, action)
    }

    /// Suspends the caller for `duration` on this clock; throws `CancellationError` (at once)
    /// when the calling task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// Suspends the caller until `deadline` on this clock; throws `CancellationError` (at once)
    /// when the calling task is cancelled.
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let sleeper = Sleeper(clock: self)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                sleeper.start(continuation, ticket: schedule(at: deadline) { sleeper.fire() })
            }
        } onCancel: {
            sleeper.cancel()
        }
    }
}

/// One `sleep`: whichever of the deadline and a cancellation comes first resumes it, once.
private final class Sleeper: Sendable {
    /// Each continuation is resumed once: by `start` (fired or cancelled before it came), or
    /// by whichever of `fire` and `cancel` ends `.waiting`.
    private enum State {
        case starting
        case waiting(CheckedContinuation<Void, any Error>, TimerTicket)
        case fired
        case cancelled
        case ended
    }
    private let clock: any TimerClock
    private let state = Locked(State.starting)

    init(clock: any TimerClock) { self.clock = clock }

    /// Called once the deadline is scheduled: either ends the sleep at once (the deadline has
    /// come already, or the task was cancelled meanwhile) or leaves it to them.
    func start(_ continuation: CheckedContinuation<Void, any Error>, ticket: TimerTicket) {
        let before = state.withLock { state -> State in
            defer { if case .starting = state { state = .waiting(continuation, ticket) } else { state = .ended } }
            return state
        }
        switch before {
        case .fired:
            continuation.resume()
        case .cancelled:
            clock.cancel(ticket)
            continuation.resume(throwing: CancellationError())
        case .starting, .waiting, .ended:
            break
        }
    }

    func fire() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            switch state {
            case .starting: state = .fired
            case .waiting(let continuation, _): state = .ended; return continuation
            case .fired, .cancelled, .ended: break
            }
            return nil
        }
        waiting?.resume()
    }

    func cancel() {
        let waiting = state.withLock { state -> (CheckedContinuation<Void, any Error>, TimerTicket)? in
            switch state {
            case .starting: state = .cancelled
            case .waiting(let continuation, let ticket): state = .ended; return (continuation, ticket)
            case .fired, .cancelled, .ended: break
            }
            return nil
        }
        guard let (continuation, ticket) = waiting else { return }
        clock.cancel(ticket)
        continuation.resume(throwing: CancellationError())
    }
}
