import SkyNetRuntime

/// The jobs a system runs, by name: the built-in `scan` always, and whatever its operator
/// declared (commands) or its program registered (Swift work). A system runs nothing else.
public struct JobRegistry: Sendable {
    /// A name or job that cannot be registered, saying why.
    public struct Refusal: Error, CustomStringConvertible, Equatable, Sendable {
        /// Why the name or job was refused, and what to do.
        public let description: String
    }

    /// The name of the built-in simulated scan, the default job.
    public static let scan = "scan"
    /// The longest job name.
    package static let maxNameLength = 64

    private var jobs: [String: any Job]

    /// A registry holding only the built-in `scan` job; add yours with `register`.
    public init() {
        self.init(api: UnreliableAPI())
    }

    /// A registry holding the built-in scan, failing as `api` says.
    package init(api: UnreliableAPI) {
        jobs = [Self.scan: ScanJob(api: api)]
    }

    /// This registry with its built-in scan failing as `api` says (a node's `--failing-every`).
    package func replacingScan(api: UnreliableAPI) -> JobRegistry {
        var copy = self
        copy.jobs[Self.scan] = ScanJob(api: api)
        return copy
    }

    /// The names of the jobs, sorted.
    public var names: [String] { jobs.keys.sorted() }

    /// Each job's summary (the command as written, or a label), by name.
    package var summaries: [String: String] { jobs.mapValues(\.summary) }

    /// The job called `name`, if this registry has it.
    package func job(named name: String) -> (any Job)? { jobs[name] }

    /// Adds `job` as `name`. Names are 1 to 64 letters, digits, `-`, `_` or `.`; `scan` is
    /// built in, and a name is registered once.
    package mutating func register(_ name: String, _ job: any Job) throws(Refusal) {
        try Self.validate(name)
        guard name != Self.scan else {
            throw Refusal(description: "the job name 'scan' is the built-in simulated scan; choose another name")
        }
        guard jobs[name] == nil else { throw Refusal(description: "the job '\(name)' is declared twice") }
        jobs[name] = job
    }

    /// Adds Swift work that suspends rather than computes (it awaits I/O, timers, other tasks).
    public mutating func register(
        _ name: String, summary: String = "Swift closure", _ body: @escaping @Sendable (JobRequest) async throws -> String
    ) throws(Refusal) {
        try register(name, ClosureJob(summary: summary, body: body))
    }

    /// Adds Swift work that computes: each call runs on a thread of its own, never on the
    /// cooperative pool.
    public mutating func register(
        _ name: String, summary: String = "Swift closure", blocking body: @escaping @Sendable (JobRequest) throws -> String
    ) throws(Refusal) {
        try register(name, ClosureJob(summary: summary) { request in
            try Task.checkCancellation()
            return try await onOwnThread(named: "skynet-job") { try body(request) }
        })
    }

    /// Checks that `name` can name a job (it travels on the wire and in logs).
    package static func validate(_ name: String) throws(Refusal) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard !name.isEmpty, name.utf8.count <= maxNameLength, allowed else {
            throw Refusal(description: "'\(name)' cannot name a job: use 1 to \(maxNameLength) letters, digits, '-', '_' or '.'")
        }
    }
}

/// The reference work: asks the unreliable API, then "scans" for `duration` seconds (suspended,
/// holding no thread) and returns the sector number as text. The time is kept by the real
/// clock (`DeadlineTimer.shared`), to its deadline and at most a thousandth of the duration
/// (1 ms at most) after it: 10 ms of work takes 10 ms, not 10.25, and scans that end within
/// the same millisecond wake together (`coalesced`).
package struct ScanJob: Job {
    package let api: UnreliableAPI
    package var summary: String { "built-in simulated scan" }
    /// A timer and a number: it may run on an event loop.
    package var waitsOnly: Bool { true }

    package init(api: UnreliableAPI) {
        self.api = api
    }

    package func run(_ request: JobRequest) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(request.duration)
        try api.action()
        if request.duration > 0 {
            try await DeadlineTimer.shared.sleep(until: deadline, tolerance: .seconds(request.duration / 1_000))
        } else {
            try Task.checkCancellation()
        }
        return String(request.sector)
    }
}
