/// The real clock: monotonic time (`ContinuousClock`), its actions run by one thread.
///
/// The thread waits for the earliest deadline with a timed wait that ends 100 µs before it,
/// then yields the core until the deadline: an action runs within microseconds of its deadline
/// when a core is free, where a timed wait alone ends up to the kernel's timer slack (50 µs)
/// late and then has to wake. (A relative `Task.sleep` went through Dispatch's timers with
/// their leeway and overslept about 0.25 ms in 10 ms.)
///
/// Scheduling and cancelling cost O(1) for deadlines that come in the order they fall due, and
/// O(log n) in the actions pending for others (`TimerQueue`); the thread is woken only
/// when a new deadline is earlier than the one it waits for, so deadlines that are mostly
/// cancelled before they come (a request's time limit) cost no wake-up at all.
package final class DeadlineTimer: TimerClock {
    /// The process's real clock; its thread starts with the first action.
    package static let shared = DeadlineTimer()

    private struct State {
        var queue = TimerQueue()
        var threadStarted = false
        /// The deadline the thread waits for; nil while it waits for a wake-up alone.
        var waitingUntil: ContinuousClock.Instant?
        /// Whether the thread waits (else it runs actions or spins, and looks again after).
        var asleep = false
    }

    private let state = Locked(State())
    /// Counts wake-ups: the thread waits while it stays what it read before its last look.
    private let wakeUps = Guarded<UInt64>(0)
    /// How long before a deadline the thread stops waiting and spins (yielding the core).
    static let spinWindow = Duration.microseconds(100)

    package init() {}

    package var now: ContinuousClock.Instant { .now }

    @discardableResult
    package func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerTicket {
        let (ticket, wake) = state.withLock { state -> (TimerTicket, Bool) in
            let ticket = state.queue.insert(at: deadline, action)
            if !state.threadStarted {
                state.threadStarted = true
                startThread(named: "skynet-timer") { [self] in run() }
                return (ticket, false)
            }
            guard state.asleep, state.waitingUntil.map({ deadline < $0 }) ?? true else { return (ticket, false) }
            state.asleep = false
            return (ticket, true)
        }
        if wake { wakeUps.withLock { $0 &+= 1 } }
        return ticket
    }

    @discardableResult
    package func cancel(_ ticket: TimerTicket) -> Bool {
        state.withLock { $0.queue.remove(ticket) }
    }

    private enum Step {
        case run([TimerQueue.Due])
        case spin
        case wait(until: ContinuousClock.Instant?)
    }

    /// The timer thread: runs what is due, waits for the earliest deadline, again.
    private func run() {
        while true {
            // Read before looking at the queue: a deadline scheduled after the look changes it.
            let seen = wakeUps.withLock { $0 }
            switch nextStep() {
            case .run(let due):
                for entry in due { entry.action() }
            case .spin:
                sched_yield()
            case .wait(let deadline):
                wakeUps.wait(while: { $0 == seen }, deadline: deadline) { _, _ in }
            }
        }
    }

    private func nextStep() -> Step {
        state.withLock { state in
            let now = ContinuousClock.now
            var due: [TimerQueue.Due] = []
            while let entry = state.queue.popFirst(dueAt: now) { due.append(entry) }
            state.asleep = false
            if !due.isEmpty { return .run(due) }
            guard let next = state.queue.firstDeadline else {
                state.waitingUntil = nil
                state.asleep = true
                return .wait(until: nil)
            }
            if next - now <= Self.spinWindow { return .spin }
            state.waitingUntil = next
            state.asleep = true
            return .wait(until: next - Self.spinWindow)
        }
    }
}
