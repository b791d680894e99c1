import SkyNetRuntime
import SkyNetWork

/// Counters of a system's work, as `ping` reports them.
package struct SystemCounters: Sendable, Equatable {
    package var running = 0
    package var completed = 0
    package var failed = 0
}

/// The scan system of this process: runs tasks in process with the jobs of its registry, at
/// most `capacity` at once, each within its deadline.
///
/// The capacity is checked and taken in one synchronous step, so concurrent callers (all the
/// connections of a node) can never push it past `capacity`: the extra ones fail with `busy`.
/// A slot is given back only when the task's work has really ended, also after its deadline.
/// Each running task holds a job slot of its own, 1...capacity (`JobSlots`), which a command
/// job sees as `{%}`.
///
/// A task whose caller lets it wait (`run(_:workingDirectory:waiting:)`, a node's client that
/// sends its next scans before a slot frees) waits in line, first come first served, up to
/// `queue` of them: a slot that frees goes straight to the first in line, in the step that
/// gives it back, so the next task starts with no round trip to its coordinator.
///
/// The slots, the line and the counters are one value behind one lock (`Slots`), taken and
/// given back in one step each, so `run` is not isolated: a task runs where its caller runs (a
/// node's built-in scan on the event loop of its link), with no hop onto the actor and back,
/// each a trip through an executor's queue.
public actor LocalSystem: ScanSystem {
    /// The name reports and events give the system.
    public nonisolated let name: String
    package nonisolated let capacity: Int
    /// How many tasks may wait in line for a slot (0: none; every task beyond the capacity is `busy`).
    package nonisolated let queue: Int
    /// Always true: it runs tasks in this process.
    public nonisolated var isLocal: Bool { true }
    /// The jobs this system runs; a task naming another fails with `unknown-job`.
    package nonisolated let jobs: JobRegistry
    /// The slots, the line and the counters; a node answers pings with the counters on the
    /// connection's reader thread.
    private nonisolated let slots: Locked<Slots>
    /// The counters as of the last change.
    package nonisolated var counters: SystemCounters { slots.withLock { $0.counters } }
    /// The most tasks ever running at once: a witness for tests and status.
    package var highWater: Int { slots.withLock { $0.highWater } }
    /// What keeps the tasks' deadlines (and the built-in scan's time).
    package nonisolated let clock: any TimerClock

    /// What changes when a task starts, waits, ends or is refused.
    private struct Slots: Sendable {
        var counters = SystemCounters()
        var highWater = 0
        /// The job slots (`{%}`) of the running tasks; taken and given back with `counters.running`.
        var jobSlots: JobSlots
        /// The tasks waiting for a slot, first in line first; each is handed its slot when one frees.
        var waiting: [Waiter] = []
        var lastWaiter: UInt64 = 0
        /// Set by `refuseWaiting`: from then on a task that finds no free slot is `busy` with it.
        var refusal: String?

        /// The lowest free slot, counted as running; nil when every slot is taken.
        mutating func takeFree(capacity: Int) -> Int? {
            guard counters.running < capacity, let free = jobSlots.take() else { return nil }
            counters.running += 1
            highWater = max(highWater, counters.running)
            return free
        }
    }

    private struct Waiter: Sendable {
        let id: UInt64
        let continuation: CheckedContinuation<Int, any Error>
        /// When it stops waiting and is answered `busy`.
        let limit: TimerTicket
    }

    /// A system in this process named `name` that runs at most `capacity` tasks of `jobs` at a
    /// time: a coordinator's own system (`Systems` lists it first).
    public init(name: String = Systems.localName, capacity: Int = 4, jobs: JobRegistry) {
        self.init(name: name, capacity: capacity, jobs: jobs, clock: DeadlineTimer.shared)
    }

    /// A system running the jobs of `jobs`, keeping their deadlines on `clock`.
    package init(name: String = "local", capacity: Int = 4, queue: Int = 0, jobs: JobRegistry, clock: any TimerClock) {
        self.name = name
        self.capacity = max(0, capacity)
        self.queue = max(0, queue)
        slots = Locked(Slots(jobSlots: JobSlots(capacity: capacity)))
        self.jobs = jobs
        self.clock = clock
    }

    /// A system running only the built-in scan, failing as `api` says.
    package init(name: String = "local", capacity: Int = 4, queue: Int = 0, api: UnreliableAPI = UnreliableAPI()) {
        self.init(name: name, capacity: capacity, queue: queue, jobs: JobRegistry(api: api), clock: DeadlineTimer.shared)
    }

    /// Runs `task`'s job in this process, within the task's deadline, and returns its result.
    public nonisolated func run(_ task: ScanTask) async throws -> String {
        try await run(task, workingDirectory: nil)
    }

    /// Runs `task` with its job in `workingDirectory` (nil: where this process runs): a node
    /// runs a task that came with its files in the task's own work directory, where `{}`
    /// names the copy and the basefiles sit. With `waiting`, a task that finds every slot
    /// taken waits in line for one (if the line has room) for up to that long, then is `busy`;
    /// a cancelled caller leaves the line at once.
    package nonisolated func run(_ task: ScanTask, workingDirectory: String? = nil, waiting: Duration? = nil) async throws -> String {
        guard let job = jobs.job(named: task.job) else {
            throw ScanFailure(code: .unknownJob, message: "\(name) has no job '\(task.job)'")
        }
        let slot = try await takeSlot(waiting: waiting)
        defer { free(slot) }
        do {
            let result = try await Self.execute(job, task, slot: slot, workingDirectory: workingDirectory, clock: clock)
            slots.withLock { $0.counters.completed += 1 }
            return result
        } catch {
            slots.withLock { $0.counters.failed += 1 }
            throw error
        }
    }

    /// Answers every task waiting for a slot `busy` with `message`, and every one that would
    /// wait from now on (a node that drains or stops: their coordinators run them elsewhere).
    package func refuseWaiting(_ message: String) {
        let refused = slots.withLock { slots in
            slots.refusal = message
            defer { slots.waiting.removeAll() }
            return slots.waiting
        }
        for waiter in refused {
            clock.cancel(waiter.limit)
            waiter.continuation.resume(throwing: ScanFailure(code: .busy, message: message))
        }
    }

    /// How many tasks wait for a slot: lets tests await a waiter instead of sleeping.
    package var waitingCount: Int { slots.withLock { $0.waiting.count } }

    /// A free slot, taken at once; else, with `waiting`, one handed over in line (still counted
    /// as running); else `busy`. Apart from `run`: its frame is held while the task runs.
    private nonisolated func takeSlot(waiting: Duration?) async throws -> Int {
        if let free = slots.withLock({ $0.takeFree(capacity: capacity) }) { return free }
        guard let waiting, queue > 0 else { throw ScanFailure.busy(name, capacity: capacity) }
        return try await waitForSlot(within: waiting)
    }

    /// Gives `slot` back: to the first task in line, which starts in this step, else to the free slots.
    private nonisolated func free(_ slot: Int) {
        let next = slots.withLock { slots -> Waiter? in
            guard slots.waiting.isEmpty else { return slots.waiting.removeFirst() }
            slots.counters.running -= 1
            slots.jobSlots.giveBack(slot)
            return nil
        }
        guard let next else { return }
        clock.cancel(next.limit)
        next.continuation.resume(returning: slot)
    }

    /// Waits in line until a slot is handed over (returned), `bound` passes (`busy`) or the
    /// caller is cancelled; `busy` at once when the line is full.
    private nonisolated func waitForSlot(within bound: Duration) async throws -> Int {
        let id = slots.withLock { slots in
            slots.lastWaiter += 1
            return slots.lastWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Checked where the waiter joins the line, in one step with joining it: a
                // refusal that came after the first look is seen here.
                let outcome = slots.withLock { slots -> Result<Int, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let free = slots.takeFree(capacity: capacity) { return .success(free) }
                    if let refusal = slots.refusal { return .failure(ScanFailure(code: .busy, message: refusal)) }
                    guard slots.waiting.count < queue else { return .failure(ScanFailure.busy(name, capacity: capacity)) }
                    // Its action only starts a task: the line's lock is held here.
                    let limit = clock.schedule(at: clock.now + bound) { [self] in
                        Task { self.stopWaiting(id, with: ScanFailure(code: .busy, message:
                            "\(self.name) had no free slot within \(bound.seconds.asWritten) s (all \(self.capacity) busy)")) }
                    }
                    slots.waiting.append(Waiter(id: id, continuation: continuation, limit: limit))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            stopWaiting(id, with: CancellationError())
        }
    }

    /// Takes waiter `id` out of the line, if it still waits, and fails its task with `error`.
    private nonisolated func stopWaiting(_ id: UInt64, with error: any Error) {
        let waiter = slots.withLock { slots -> Waiter? in
            guard let index = slots.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return slots.waiting.remove(at: index)
        }
        guard let waiter else { return }
        clock.cancel(waiter.limit)
        waiter.continuation.resume(throwing: error)
    }
}
