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
    /// Behind a lock, written only on the actor: a node answers pings with them on the
    /// connection's reader thread, with no hop onto the actor.
    private nonisolated let live = Locked(SystemCounters())
    /// The counters as of the last change, read without awaiting the actor.
    package nonisolated var counters: SystemCounters { live.withLock { $0 } }
    /// The most tasks ever running at once: a witness for tests and status.
    package private(set) var highWater = 0
    /// The job slots (`{%}`) of the running tasks; taken and given back with `running`.
    private var slots: JobSlots
    /// What keeps the tasks' deadlines (and the built-in scan's time).
    package nonisolated let clock: any TimerClock
    /// The tasks waiting for a slot, first in line first; each is handed its slot when one frees.
    private var waiting: [Waiter] = []
    private var lastWaiter: UInt64 = 0
    /// Set by `refuseWaiting`: from then on a task that finds no free slot is `busy` with it.
    private var refusal: String?

    private struct Waiter {
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
        slots = JobSlots(capacity: capacity)
        self.jobs = jobs
        self.clock = clock
    }

    /// A system running only the built-in scan, failing as `api` says.
    package init(name: String = "local", capacity: Int = 4, queue: Int = 0, api: UnreliableAPI = UnreliableAPI()) {
        self.init(name: name, capacity: capacity, queue: queue, jobs: JobRegistry(api: api), clock: DeadlineTimer.shared)
    }

    /// Runs `task`'s job in this process, within the task's deadline, and returns its result.
    public func run(_ task: ScanTask) async throws -> String {
        try await run(task, workingDirectory: nil)
    }

    /// Runs `task` with its job in `workingDirectory` (nil: where this process runs): a node
    /// runs a task that came with its files in the task's own work directory, where `{}`
    /// names the copy and the basefiles sit. With `waiting`, a task that finds every slot
    /// taken waits in line for one (if the line has room) for up to that long, then is `busy`;
    /// a cancelled caller leaves the line at once.
    package func run(_ task: ScanTask, workingDirectory: String? = nil, waiting: Duration? = nil) async throws -> String {
        guard let job = jobs.job(named: task.job) else {
            throw ScanFailure(code: .unknownJob, message: "\(name) has no job '\(task.job)'")
        }
        let slot = try await takeSlot(waiting: waiting)
        defer { free(slot) }
        do {
            let result = try await Self.execute(job, task, slot: slot, workingDirectory: workingDirectory, clock: clock)
            live.withLock { $0.completed += 1 }
            return result
        } catch {
            live.withLock { $0.failed += 1 }
            throw error
        }
    }

    /// Answers every task waiting for a slot `busy` with `message`, and every one that would
    /// wait from now on (a node that drains or stops: their coordinators run them elsewhere).
    package func refuseWaiting(_ message: String) {
        refusal = message
        let refused = waiting
        waiting.removeAll()
        for waiter in refused {
            clock.cancel(waiter.limit)
            waiter.continuation.resume(throwing: ScanFailure(code: .busy, message: message))
        }
    }

    /// How many tasks wait for a slot: lets tests await a waiter instead of sleeping.
    package var waitingCount: Int { waiting.count }

    /// A free slot, taken at once; else, with `waiting`, one handed over in line (still counted
    /// as running); else `busy`. Apart from `run`: its frame is held while the task runs.
    private func takeSlot(waiting: Duration?) async throws -> Int {
        if let free = takeFreeSlot() { return free }
        guard let waiting, queue > 0 else { throw ScanFailure.busy(name, capacity: capacity) }
        if let refusal { throw ScanFailure(code: .busy, message: refusal) }
        return try await waitForSlot(within: waiting)
    }

    /// The lowest free slot, counted as running; nil when every slot is taken.
    private func takeFreeSlot() -> Int? {
        guard counters.running < capacity, let free = slots.take() else { return nil }
        live.withLock { $0.running += 1 }
        highWater = max(highWater, counters.running)
        return free
    }

    /// Gives `slot` back: to the first task in line, which starts in this step, else to the free slots.
    private func free(_ slot: Int) {
        guard waiting.isEmpty else {
            let next = waiting.removeFirst()
            clock.cancel(next.limit)
            return next.continuation.resume(returning: slot)
        }
        live.withLock { $0.running -= 1 }
        slots.giveBack(slot)
    }

    /// Waits in line until a slot is handed over (returned), `bound` passes (`busy`) or the
    /// caller is cancelled; `busy` at once when the line is full.
    private func waitForSlot(within bound: Duration) async throws -> Int {
        lastWaiter += 1
        let id = lastWaiter
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Checked again where the waiter joins the line, in one step with joining it.
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                if let free = takeFreeSlot() { return continuation.resume(returning: free) }
                guard waiting.count < queue else { return continuation.resume(throwing: ScanFailure.busy(name, capacity: capacity)) }
                let limit = clock.schedule(at: clock.now + bound) { [self] in
                    Task { await self.stopWaiting(id, with: ScanFailure(code: .busy, message:
                        "\(self.name) had no free slot within \(bound.seconds.asWritten) s (all \(self.capacity) busy)")) }
                }
                waiting.append(Waiter(id: id, continuation: continuation, limit: limit))
            }
        } onCancel: {
            Task { await self.stopWaiting(id, with: CancellationError()) }
        }
    }

    /// Takes waiter `id` out of the line, if it still waits, and fails its task with `error`.
    private func stopWaiting(_ id: UInt64, with error: any Error) {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiting.remove(at: index)
        clock.cancel(waiter.limit)
        waiter.continuation.resume(throwing: error)
    }
}
