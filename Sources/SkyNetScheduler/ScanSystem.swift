import SkyNetWork

/// Something that runs scan tasks: the local system in this process, or a peer behind a
/// connection. The coordinator sees only this interface.
public protocol ScanSystem: Actor {
    /// The name the registry knows the system by (unique in a `Systems`).
    nonisolated var name: String { get }
    /// Whether the system runs tasks in this process (re-runs go to a local system).
    nonisolated var isLocal: Bool { get }
    /// Runs one task and returns its result, or throws why it could not.
    func run(_ task: ScanTask) async throws -> String
    /// Where the coordinator runs each attempt of this system (`run(_:)` and what it waits
    /// for), or nil for the cooperative pool. A system that only sends a request and waits for
    /// its reply names the executor that reads the reply, so neither crosses a thread; one
    /// whose attempts compute leaves it nil. Nil unless given.
    nonisolated var preferredExecutor: (any TaskExecutor)? { get }
}

extension ScanSystem {
    /// The cooperative pool: attempts may compute.
    public nonisolated var preferredExecutor: (any TaskExecutor)? { nil }
}

/// A system whose attempt is one request and its reply (a peer): the coordinator starts each
/// attempt with no task of its own, and is called back with its outcome.
package protocol RequestingSystem: ScanSystem {
    /// Starts `task` as `run(_:)` runs it, and calls `done` once, on any thread, with what
    /// `run` would return or throw; returns how to stop it (as cancelling `run` would). Nil
    /// when this task needs a task of its own (its files travel): nothing was started.
    nonisolated func start(_ task: ScanTask, done: @escaping @Sendable (Result<String, any Error>) -> Void) -> (any StartedAttempt)?
}

/// An attempt started by `RequestingSystem.start`.
package protocol StartedAttempt: Sendable {
    /// Stops the attempt, and the system is told: its `done` is called with
    /// `CancellationError`, unless the attempt had already ended another way (then `done` was
    /// called, or will be, with that end).
    func cancel()
}
