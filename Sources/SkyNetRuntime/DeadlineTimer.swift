import Foundation

/// One thread that runs actions at their deadlines: the process's timer.
///
/// A deadline is absolute (`ContinuousClock`) and the thread waits for the earliest one with
/// an absolute timed wait that ends 100 µs before it, then yields the core until the deadline:
/// an action runs within microseconds of its deadline when a core is free, where a timed wait
/// alone ends up to the kernel's timer slack (50 µs) late and then has to wake. (A relative
/// `Task.sleep` went through Dispatch's timers with their leeway and overslept about 0.25 ms
/// in 10 ms; a sleeping `Task` per request also cost two wake-ups of Dispatch's manager thread.)
///
/// Scheduling and cancelling are O(log n) in the actions pending; the thread is signalled only
/// when a new deadline is earlier than the one it already waits for, so deadlines that are
/// mostly cancelled before they come (a request's time limit) cost no wake-up at all. Actions
/// run on the timer thread, one at a time: they must be short and never block (resume a
/// continuation, fail a pending request).
public final class DeadlineTimer: Sendable {
    /// The process's timer; its thread starts with the first action.
    public static let shared = DeadlineTimer()

    /// What `schedule` returns, for `cancel`.
    public struct Ticket: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    fileprivate struct Entry {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        let action: @Sendable () -> Void
    }

    fileprivate struct State {
        var heap = DeadlineHeap()
        var nextID: UInt64 = 0
        var threadStarted = false
        /// The deadline the thread waits for; nil while it waits for a signal alone.
        var waitingUntil: ContinuousClock.Instant?
        /// Whether the thread is waiting (else it is running actions and looks again after).
        var asleep = false
    }

    private let monitor = TimerMonitor(State())
    /// How long before a deadline the thread stops waiting and spins (yielding the core).
    static let spinWindow = Duration.microseconds(100)

    public init() {}

    /// Runs `action` on the timer thread at `deadline` (at once, if it has passed), unless
    /// cancelled first.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Ticket {
        monitor.withLock { state, signal in
            state.nextID += 1
            let id = state.nextID
            state.heap.insert(Entry(deadline: deadline, id: id, action: action))
            if !state.threadStarted {
                state.threadStarted = true
                startThread(named: "skynet-timer") { [self] in run() }
            } else if state.asleep, state.waitingUntil.map({ deadline < $0 }) ?? true {
                state.asleep = false
                signal()
            }
            return Ticket(id: id)
        }
    }

    /// Forgets a pending action; false when it has already run (or is running) or was cancelled.
    @discardableResult
    public func cancel(_ ticket: Ticket) -> Bool {
        monitor.withLock { state, _ in state.heap.remove(id: ticket.id) != nil }
    }

    /// Suspends the caller until `deadline`, precisely; throws `CancellationError` (at once)
    /// when the calling task is cancelled.
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let sleeper = Sleeper(timer: self)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                sleeper.start(continuation, ticket: schedule(at: deadline) { sleeper.fire() })
            }
        } onCancel: {
            sleeper.cancel()
        }
    }

    /// One `sleep`: whichever of the deadline and a cancellation comes first resumes it, once.
    private final class Sleeper: Sendable {
        struct State {
            var continuation: CheckedContinuation<Void, any Error>?
            var ticket: Ticket?
            var fired = false
            var cancelled = false
        }
        let timer: DeadlineTimer
        let state = Locked(State())

        init(timer: DeadlineTimer) { self.timer = timer }

        /// Called once the deadline is scheduled: either ends the sleep at once (the deadline
        /// has come already, or the task was cancelled meanwhile) or leaves it to them.
        func start(_ continuation: CheckedContinuation<Void, any Error>, ticket: Ticket) {
            enum Now { case wait, fired, cancelled }
            let now = state.withLock { state -> Now in
                if state.cancelled { return .cancelled }
                if state.fired { return .fired }
                state.continuation = continuation
                state.ticket = ticket
                return .wait
            }
            switch now {
            case .wait: break
            case .fired: continuation.resume()
            case .cancelled:
                timer.cancel(ticket)
                continuation.resume(throwing: CancellationError())
            }
        }

        func fire() {
            state.withLock { state in
                state.fired = true
                defer { state.continuation = nil }
                return state.continuation
            }?.resume()
        }

        func cancel() {
            let (continuation, ticket) = state.withLock { state in
                state.cancelled = true
                defer { state.continuation = nil }
                return (state.continuation, state.ticket)
            }
            guard let continuation else { return }
            if let ticket { timer.cancel(ticket) }
            continuation.resume(throwing: CancellationError())
        }
    }

    /// The timer thread: waits for the earliest deadline, runs what is due, again.
    private func run() {
        while true {
            let due: [Entry] = monitor.wait { state in
                let now = ContinuousClock.now
                var due: [Entry] = []
                while let first = state.heap.first, first.deadline <= now {
                    due.append(state.heap.removeFirst())
                }
                if due.isEmpty {
                    state.waitingUntil = state.heap.first?.deadline
                    state.asleep = true
                    // A timed wait ends up to the kernel's timer slack (50 µs) late, and waking
                    // takes as long again: wait until just before, and spin (yielding) the rest.
                    guard let next = state.waitingUntil else { return .wait(until: nil) }
                    if next - now <= Self.spinWindow { return .spin }
                    return .wait(until: next - Self.spinWindow)
                }
                state.asleep = false
                return .done(due)
            }
            for entry in due { entry.action() }
        }
    }
}

/// A min-heap of entries by deadline, with the position of each id kept for removal.
private struct DeadlineHeap {
    private var entries: [DeadlineTimer.Entry] = []
    private var positions: [UInt64: Int] = [:]

    var first: DeadlineTimer.Entry? { entries.first }

    mutating func insert(_ entry: DeadlineTimer.Entry) {
        entries.append(entry)
        positions[entry.id] = entries.count - 1
        siftUp(entries.count - 1)
    }

    mutating func removeFirst() -> DeadlineTimer.Entry {
        remove(at: 0)
    }

    mutating func remove(id: UInt64) -> DeadlineTimer.Entry? {
        guard let index = positions[id] else { return nil }
        return remove(at: index)
    }

    private mutating func remove(at index: Int) -> DeadlineTimer.Entry {
        let removed = entries[index]
        positions[removed.id] = nil
        let last = entries.removeLast()
        if index < entries.count {
            entries[index] = last
            positions[last.id] = index
            siftDown(index)
            siftUp(index)
        }
        if entries.isEmpty, positions.capacity > 1024 { positions = [:] }  // give back a burst's memory
        return removed
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        positions[entries[a].id] = a
        positions[entries[b].id] = b
    }
}
