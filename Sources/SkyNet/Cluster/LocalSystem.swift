/// Counters of a system's work, as `ping` reports them.
public struct SystemCounters: Sendable, Equatable {
    public var running = 0
    public var completed = 0
    public var failed = 0
}

/// The scan system of this process: runs tasks in process, at most `capacity` at once.
///
/// The capacity is checked and taken in one synchronous step, so concurrent callers (all the
/// connections of a node) can never push it past `capacity`: the extra ones fail with `busy`.
public actor LocalSystem: ScanSystem {
    public nonisolated let name: String
    public nonisolated let capacity: Int
    public nonisolated var isLocal: Bool { true }
    private let api: UnreliableAPI
    public private(set) var counters = SystemCounters() {
        didSet { live.withLock { $0 = counters } }
    }
    /// A copy of `counters`, readable without a hop onto the actor (a node answers pings with
    /// it on the connection's reader thread).
    private nonisolated let live = Locked(SystemCounters())
    /// The most tasks ever running at once: a witness for tests and status.
    public private(set) var highWater = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    public init(name: String = "local", capacity: Int = 4, api: UnreliableAPI = UnreliableAPI()) {
        self.name = name
        self.capacity = max(0, capacity)
        self.api = api
    }

    public func run(_ task: ScanTask) async throws -> String {
        guard task.isScan else { throw ScanFailure(code: "unknown-job", message: "\(name) has no job '\(task.job)'") }
        guard counters.running < capacity else { throw ScanFailure.busy(name, capacity: capacity) }
        counters.running += 1
        highWater = max(highWater, counters.running)
        defer {
            counters.running -= 1
            if counters.running == 0 { wakeIdleWaiters() }
        }
        do {
            let result = try await task.perform(using: api)
            counters.completed += 1
            return result
        } catch {
            counters.failed += 1
            throw error
        }
    }
}

extension LocalSystem {
    /// The counters as of the last change, read without awaiting the actor.
    public nonisolated var currentCounters: SystemCounters { live.withLock { $0 } }

    /// Returns once no task is running (at once when none is).
    public func waitUntilIdle() async {
        guard counters.running > 0 else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    private func wakeIdleWaiters() {
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
