import SkyNetRuntime
import SkyNetWork

/// The files each completed task returned, by task id, from the system that ran it to the
/// output that journals it. `ScanSystem.run` still returns only the result text:
/// a system puts a task's files here just before its `run` returns, and the output takes them
/// when it journals the task's `completed`. So `ScanEvent`, the coordinator and the dashboard
/// stay as they are. Behind a lock (`Locked`): systems put from their tasks, the output takes.
///
/// Bounded by the tasks in flight: every completed task's entry is taken once (a task that
/// returned nothing puts nothing); a re-run's entry replaces the one before it.
package final class ReturnRecords: Sendable {
    private let table = Locked<[UUID: [ReturnedFile]]>([:])

    package init() {}

    /// Records the files task `id` returned (replacing an earlier attempt's).
    package func put(_ id: UUID, _ files: [ReturnedFile]) {
        table.withLock { $0[id] = files }
    }

    /// The files task `id` returned, forgotten from here on; empty when it returned none.
    package func take(_ id: UUID) -> [ReturnedFile] {
        table.withLock { $0.removeValue(forKey: id) } ?? []
    }

    /// How many tasks' files wait to be taken (a witness for tests).
    package var count: Int { table.withLock { $0.count } }
}
