import SkyNetRuntime

/// One unit of work: one numbered sector, run by a job.
///
/// By default the job is the built-in simulated scan, which takes `duration` seconds and
/// returns the sector number as text. Another job (a command a node declared, Swift work a
/// program registered) gets the task's input text and sector number instead.
public struct ScanTask: Sendable, Hashable, Identifiable {
    /// The longest simulated work a task may ask for, in seconds (PROTOCOL.md).
    package static let maxDuration: Double = 3600
    /// The longest deadline a task may carry, in seconds (a week).
    package static let maxTimeout: Double = 7 * 86400
    /// The most bytes of input text a task may carry (it travels on one wire line of 1 MiB).
    ///
    /// A command job hands the input to its program as an argument and as `SKYNET_INPUT`, and
    /// Linux refuses any one argument or environment string of 131,072 bytes or more: the
    /// bound leaves room for the variable's name, so an input that is accepted can be run.
    package static let maxTextBytes = 128 * 1024 - 64

    /// Unique per task: tells two tasks of the same sector apart.
    public let id: UUID
    /// The sector number (the protocol's `input` of a scan); any integer.
    public let input: Int
    /// Seconds of simulated work; finite and within 0...3600. Only the built-in scan uses it.
    public let duration: Double
    /// The name of the job that runs the task (`JobRegistry.scan` by default).
    public let job: String
    /// The input text the job gets; nil: the sector number as text.
    public let text: String?
    /// Seconds the task may run once started before it is stopped and fails; nil: no deadline.
    public let timeout: Double?

    /// A task for sector `input` of `job`, with `text` as its input (nil: the sector number) and a
    /// deadline of `timeout` seconds (nil: none); `duration` is the built-in scan's simulated work.
    public init(
        id: UUID = TaskID.next(), input: Int, duration: Double = 1.0,
        job: String = JobRegistry.scan, text: String? = nil, timeout: Double? = nil
    ) {
        self.id = id
        self.input = input
        self.duration = duration
        self.job = job
        self.text = text
        self.timeout = timeout
    }

    /// The text the job gets as its input (`{}`): the input text, or the sector number.
    package var inputText: String { text ?? String(input) }

    /// Whether the task runs the built-in simulated scan.
    package var isScan: Bool { job == JobRegistry.scan }

    /// What the task asks of its job in slot `slot` and `workingDirectory`, with its deadline
    /// counted from `start`.
    package func request(startingAt start: ContinuousClock.Instant = .now, slot: Int = 1, workingDirectory: String? = nil) -> JobRequest {
        JobRequest(sector: input, input: inputText, duration: duration,
                   deadline: timeout.map { start + .seconds($0) }, slot: slot, workingDirectory: workingDirectory)
    }

    /// Whether `seconds` is a deadline the protocol accepts (finite, above 0, at most a week).
    package static func isValidTimeout(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds > 0 && seconds <= maxTimeout
    }

    /// Whether `duration` is one the protocol accepts (finite, 0...3600).
    package static func isValidDuration(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds >= 0 && seconds <= maxDuration
    }
}
