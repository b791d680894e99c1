import SkyNetRuntime
import SkyNetWork

/// What happened to one task, in the order the coordinator saw it.
public enum ScanEvent: Sendable {
    /// An attempt at the task was handed to `system`.
    case started(ScanTask, system: String, isLocal: Bool, attempt: Int)
    /// The task completed on `system` at its `attempt`-th try.
    case completed(ScanTask, result: String, system: String, isLocal: Bool, attempt: Int, seconds: Double)
    /// The task failed on `system` and will run again.
    case rerun(ScanTask, attempt: Int, system: String, error: any Error)
    /// The task failed its last allowed attempt, which ran on `system` for `seconds`.
    case gaveUp(ScanTask, attempts: Int, system: String, seconds: Double, error: any Error)
}

/// What one system did in a scan.
package struct SystemTally: Sendable, Equatable {
    package var completed = 0
    /// Attempts that failed on this system (each was re-run or given up).
    package var failed = 0
    /// Attempts it ran that were re-runs of a task that had failed (anywhere) before.
    package var reruns = 0
    /// Times it answered `busy` (full with other coordinators' work): back-pressure, not
    /// failures; the task went back to the queue at no cost.
    package var busy = 0
    /// Seconds of the attempts it completed, added up.
    package var busySeconds: Double = 0

    /// Mean seconds of a completed attempt.
    package var meanSeconds: Double { completed == 0 ? 0 : busySeconds / Double(completed) }

    package init(completed: Int = 0, failed: Int = 0, reruns: Int = 0, busy: Int = 0, busySeconds: Double = 0) {
        self.completed = completed
        self.failed = failed
        self.reruns = reruns
        self.busy = busy
        self.busySeconds = busySeconds
    }
}

/// The outcome of a whole scan: counters only, so its size does not depend on the number of
/// tasks (each task's result went out through `ScanEvent.completed`).
public struct ScanReport: Sendable {
    /// How many tasks the scan was given.
    public let total: Int
    /// How many tasks used up their attempts.
    public var gaveUp = 0
    /// How many failed attempts were queued to run again (a stopped scan may not have run them).
    package var reruns = 0
    /// How many `busy` answers sent a task back to the queue (they cost no attempt).
    package var busyBounces = 0
    /// What each system did, by name.
    package var systems: [String: SystemTally] = [:]
    /// How long the scan took, in seconds.
    public var seconds: Double = 0
    /// Whether the scan was stopped (cancelled) before every task had its outcome.
    public var interrupted = false

    package init(total: Int) {
        self.total = total
    }

    /// How many tasks completed.
    public var completed: Int { systems.values.reduce(0) { $0 + $1.completed } }

    /// Completed tasks by the name of the system that completed them.
    public var completedBySystem: [String: Int] { systems.filter { $0.value.completed > 0 }.mapValues(\.completed) }

    /// How many tasks neither completed nor used up their attempts (an interrupted scan).
    package var notRun: Int { total - completed - gaveUp }
}
