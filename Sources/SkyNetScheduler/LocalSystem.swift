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
public actor LocalSystem: ScanSystem {
    /// The name reports and events give the system.
    public nonisolated let name: String
    package nonisolated let capacity: Int
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

    /// A system in this process named `name` that runs at most `capacity` tasks of `jobs` at a
    /// time: a coordinator's own system (`Systems` lists it first).
    public init(name: String = Systems.localName, capacity: Int = 4, jobs: JobRegistry) {
        self.init(name: name, capacity: capacity, jobs: jobs, clock: DeadlineTimer.shared)
    }

    /// A system running the jobs of `jobs`, keeping their deadlines on `clock`.
    package init(name: String = "local", capacity: Int = 4, jobs: JobRegistry, clock: any TimerClock) {
        self.name = name
        self.capacity = max(0, capacity)
        slots = JobSlots(capacity: capacity)
        self.jobs = jobs
        self.clock = clock
    }

    /// A system running only the built-in scan, failing as `api` says.
    package init(name: String = "local", capacity: Int = 4, api: UnreliableAPI = UnreliableAPI()) {
        self.init(name: name, capacity: capacity, jobs: JobRegistry(api: api))
    }

    /// Runs `task`'s job in this process, within the task's deadline, and returns its result.
    public func run(_ task: ScanTask) async throws -> String {
        try await run(task, workingDirectory: nil)
    }

    /// Runs `task` with its job in `workingDirectory` (nil: where this process runs): a node
    /// runs a task that came with its files in the task's own work directory, where `{}`
    /// names the copy and the basefiles sit.
    package func run(_ task: ScanTask, workingDirectory: String?) async throws -> String {
        guard let job = jobs.job(named: task.job) else {
            throw ScanFailure(code: .unknownJob, message: "\(name) has no job '\(task.job)'")
        }
        guard counters.running < capacity, let slot = slots.take() else { throw ScanFailure.busy(name, capacity: capacity) }
        live.withLock { $0.running += 1 }
        highWater = max(highWater, counters.running)
        defer {
            live.withLock { $0.running -= 1 }
            slots.giveBack(slot)
        }
        do {
            let result = try await Self.execute(job, task, slot: slot, workingDirectory: workingDirectory, clock: clock)
            live.withLock { $0.completed += 1 }
            return result
        } catch {
            live.withLock { $0.failed += 1 }
            throw error
        }
    }
}
