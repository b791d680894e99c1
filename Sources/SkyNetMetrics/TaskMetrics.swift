import SkyNetRuntime
import SkyNetWork

/// Tasks by job and outcome, and how long they took: `skynet_tasks_total{job,outcome}` and
/// the histogram `skynet_task_seconds{job}`. A node keeps one (`Node.taskMetrics`), a
/// coordinator another (`Coordinator.metrics`). Counts only grow, and are read and written
/// under one lock, so a scrape never sees one go down.
///
/// Bounded: the label set is the jobs given at `init` (every pair of job and outcome made at
/// 0 up front, so a scrape shows them before the first task) and `(unknown)`, under which a
/// job name from outside that list is counted: a client cannot grow it.
package final class TaskMetrics: Sendable {
    package enum Outcome: String, Sendable, CaseIterable {
        case completed, failed, cancelled, deadline, busy
    }

    /// The job label of a task whose job is not one of the known ones.
    package static let unknownJob = "(unknown)"
    /// Upper bounds of `skynet_task_seconds`, from 10 ms to an hour.
    package static let bounds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

    private struct Key: Hashable {
        let job: String
        let outcome: Outcome
    }

    private struct State {
        var counts: [Key: Int] = [:]
        var seconds: [String: HistogramCounts] = [:]
    }

    private let known: Set<String>
    private let state: Locked<State>

    package init(jobs: [String]) {
        known = Set(jobs)
        var state = State()
        for job in known {
            for outcome in Outcome.allCases { state.counts[Key(job: job, outcome: outcome)] = 0 }
            state.seconds[job] = HistogramCounts(bounds: Self.bounds)
        }
        self.state = Locked(state)
    }

    /// Counts one task of `job` that ended as `outcome`; `seconds` (nil for a `busy`
    /// refusal, which never ran) goes into the histogram.
    package func record(job: String, outcome: Outcome, seconds: Double?) {
        let job = known.contains(job) ? job : Self.unknownJob
        state.withLock { state in
            state.counts[Key(job: job, outcome: outcome), default: 0] += 1
            if let seconds, outcome != .busy {
                state.seconds[job, default: HistogramCounts(bounds: Self.bounds)].observe(seconds)
            }
        }
    }

    /// The outcome a failure code stands for: anything but a stop, a deadline or a refusal
    /// for want of room is a failure.
    package static func outcome(of code: FailureCode) -> Outcome {
        switch code {
        case .cancelled: .cancelled
        case .deadline: .deadline
        case .busy: .busy
        default: .failed
        }
    }

    /// The outcome of a task that threw `error` (a `ScanFailure`'s code, a cancellation, else failed).
    package static func outcome(of error: any Error) -> Outcome {
        if let failure = error as? ScanFailure { return outcome(of: failure.code) }
        return error is CancellationError ? .cancelled : .failed
    }

    /// How many tasks of `job` ended as `outcome` (0 for a pair never seen).
    package func count(job: String, outcome: Outcome) -> Int {
        state.withLock { $0.counts[Key(job: job, outcome: outcome)] ?? 0 }
    }

    /// How many tasks of `job` are in the histogram (its `_count`).
    package func timedCount(job: String) -> Int {
        state.withLock { Int($0.seconds[job]?.count ?? 0) }
    }

    package func families() -> [MetricFamily] {
        let state = state.withLock { $0 }
        let order = Dictionary(uniqueKeysWithValues: Outcome.allCases.enumerated().map { ($1, $0) })
        let keys = state.counts.keys.sorted { ($0.job, order[$0.outcome] ?? 0) < ($1.job, order[$1.outcome] ?? 0) }
        return [
            MetricFamily(name: "skynet_tasks_total", help: "Tasks answered, by job and outcome.", kind: .counter,
                         samples: keys.map { .init(labels: [("job", $0.job), ("outcome", $0.outcome.rawValue)],
                                                   value: Double(state.counts[$0] ?? 0)) }),
            MetricFamily(name: "skynet_task_seconds", help: "Seconds from a task's start to its answer, by job (busy refusals are not counted).",
                         kind: .histogram,
                         histograms: state.seconds.keys.sorted().compactMap { job in
                             state.seconds[job].map { .init(labels: [("job", job)], counts: $0) }
                         }),
        ]
    }
}
