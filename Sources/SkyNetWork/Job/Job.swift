/// What one task asks of a job: its sector, its input text and its limits.
public struct JobRequest: Sendable, Equatable {
    /// The task's sector number (0-based): its line in the inputs, or the number itself.
    public let sector: Int
    /// The task's input text (the sector number as text when there is no inputs file).
    public let input: String
    /// Seconds of simulated work: the built-in `scan` job's one parameter; other jobs ignore it.
    package let duration: Double
    /// The task's deadline, if it has one: at that moment its work is stopped.
    public let deadline: ContinuousClock.Instant?
    /// The job slot the task holds on its system (1...capacity, `{%}`): no other task running
    /// there at the same time holds it.
    public let slot: Int
    /// Where the task runs (a command job's working directory): the task's own work directory
    /// on a node that received its files; nil: where the process runs.
    package let workingDirectory: String?

    package init(sector: Int, input: String, duration: Double = 1.0, deadline: ContinuousClock.Instant? = nil, slot: Int = 1,
                workingDirectory: String? = nil) {
        self.sector = sector
        self.input = input
        self.duration = duration
        self.deadline = deadline
        self.slot = slot
        self.workingDirectory = workingDirectory
    }

    /// The same request, in job slot `slot`.
    package func inSlot(_ slot: Int) -> JobRequest {
        JobRequest(sector: sector, input: input, duration: duration, deadline: deadline, slot: slot, workingDirectory: workingDirectory)
    }

    /// The same request, run in `directory`.
    package func inDirectory(_ directory: String?) -> JobRequest {
        JobRequest(sector: sector, input: input, duration: duration, deadline: deadline, slot: slot, workingDirectory: directory)
    }
}

/// A kind of work a system runs by name: the simulated scan, a command the operator declared,
/// or Swift code registered through the library.
///
/// `run` is cancelled when the task is (a cancel from the coordinator, a lost connection, its
/// deadline): it must then stop its work and throw `CancellationError`. Work that computes
/// rather than waits runs on a thread of its own (see `JobRegistry.register(_:blocking:)`),
/// never on the cooperative pool.
package protocol Job: Sendable {
    /// What the job runs, as peers are told it: the command as written, or a short label.
    var summary: String { get }
    /// Runs the job for one task and returns its result text.
    func run(_ request: JobRequest) async throws -> String
    /// Whether `run` only waits and computes next to nothing, running no code of the user's
    /// in this process: a node may run such a job on the event loop that reads its link.
    var waitsOnly: Bool { get }
}

extension Job {
    package var waitsOnly: Bool { false }
}

/// A job whose work is a Swift closure; work that computes rather than awaits is handed to a
/// thread of its own inside it (`JobRegistry.register(_:summary:blocking:)`).
struct ClosureJob: Job {
    let summary: String
    let body: @Sendable (JobRequest) async throws -> String

    func run(_ request: JobRequest) async throws -> String {
        try await body(request)
    }
}
