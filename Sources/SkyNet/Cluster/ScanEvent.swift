/// What happened to one task, in the order the coordinator saw it.
public enum ScanEvent: Sendable {
    /// The task completed on `system` at its `attempt`-th try.
    case completed(ScanTask, result: String, system: String, isLocal: Bool, attempt: Int, seconds: Double)
    /// The task failed on `system` and will run again.
    case rerun(ScanTask, attempt: Int, system: String, error: any Error)
    /// The task failed its last allowed attempt.
    case gaveUp(ScanTask, attempts: Int, error: any Error)
}

/// The outcome of a whole scan.
public struct ScanReport: Sendable {
    /// The result of each task, in the order the tasks were given; nil for a task given up.
    public internal(set) var results: [String?]
    /// Tasks that used up their attempts.
    public internal(set) var gaveUp: [ScanTask] = []
    /// How many failed attempts were run again.
    public internal(set) var reruns = 0
    /// Completed tasks by the name of the system that completed them.
    public internal(set) var completedBySystem: [String: Int] = [:]
    public internal(set) var seconds: Double = 0
    /// Whether the scan was stopped (cancelled) before every task had its outcome.
    public internal(set) var interrupted = false

    init(taskCount: Int) {
        results = Array(repeating: nil, count: taskCount)
    }

    /// How many tasks completed.
    public var completed: Int { completedBySystem.values.reduce(0, +) }

    /// How many tasks neither completed nor used up their attempts (an interrupted scan).
    public var notRun: Int { results.count - completed - gaveUp.count }
}
