import SkyNetCluster
import SkyNetRuntime
import SkyNetScheduler
import SkyNetWire

/// The live picture of one scan that the dashboard shows: fed every `ScanEvent` and
/// `ClusterEvent` as it happens, read as JSON (`frame()`, `currentState()`; see ScanBoard+JSON).
///
/// Recording is a few dictionary updates under one lock, so a scan at 20,000 tasks/s pays
/// well under a microsecond per event for it, and nothing here ever waits for a reader.
/// Memory is bounded whatever the scan's length: the running attempts (at most the slots),
/// the finished bars of one frame (`maxSpansBuffered`), the last `maxFailures` failures and
/// `historySeconds` of throughput.
package final class ScanBoard: Sendable {
    /// A system as the dashboard lists it before any event: the local one and every peer.
    package struct System: Sendable {
        package let name: String
        /// `host:port`, or what the local system is.
        package let address: String
        package let isLocal: Bool

        package init(name: String, address: String, isLocal: Bool = false) {
            self.name = name
            self.address = address
            self.isLocal = isLocal
        }
    }

    /// How an attempt ended, as the task stream colours it.
    enum Outcome: String {
        case done, failed, rerun = "re-run", cancelled
    }

    /// A finished attempt: a bar from `start` to `end` (milliseconds since the scan started)
    /// on one slot's row; or `count` tiny ones merged (see `coalesce`), named by the first.
    struct Span {
        let system: String
        let lane: Int
        let start: Int
        var end: Int
        let outcome: Outcome
        let sector: Int
        let attempt: Int
        var count = 1

        var isTiny: Bool { end - start < ScanBoard.tinyMilliseconds }
    }

    struct Running {
        let system: String
        let lane: Int
        let start: Int
        let attempt: Int
    }

    struct Failure {
        let time: Int
        let sector: Int
        let system: String
        let attempt: Int
        let error: String
        let gaveUp: Bool
    }

    struct Row {
        let system: System
        var state: RowState
        var detail = ""
        /// How its last link was protected (nil before it ever linked, and for the local system).
        var link: LinkProtection?
        /// Which of its slot rows hold a running attempt (grows past the capacity if the
        /// capacity is not known yet).
        var lanes: [Bool] = []
        var slots = SlotUse(name: "", capacity: 0, inFlight: 0, suspended: false)
    }

    /// How the scan ended, once it has.
    struct Ending {
        /// Milliseconds since the start: the dashboard's clock stops here.
        let time: Int
        let how: String
        let message: String
        /// The `--json` summary event, as printed.
        let summary: JSONLine
    }

    /// Everything that changes together, behind one lock.
    struct State {
        /// Live tallies; replaced by the coordinator's own report when the scan ends.
        var report: ScanReport
        var resumed: Int
        var rows: [Row] = []
        /// Where each system's row is in `rows`.
        var rowIndex: [String: Int] = [:]
        var running: [Int: Running] = [:]
        var spans: [Span] = []
        var spansOmitted = 0
        /// The last `recentSpans` bars, oldest first from `recentStart`: what `/state` gives a
        /// page opened late, so that its task stream is not empty.
        var recent: [Span] = []
        var recentStart = 0
        var failures: [Failure] = []
        /// Completions per second, the first of them for second `historyStart`.
        var perSecond: [Int] = []
        var historyStart = 0
        var eta = ETAEstimator()
        /// (seconds, finished) at recent frames, for the rate over the last few seconds.
        var rateSamples: [(Double, Int)] = []
        /// Tasks finished per second over the last `rateWindow` seconds, as of the last frame.
        var rate: Double?
        var frames = 0
        /// Set when the scan's tasks are over: the links then stop and the peers leave
        /// `Systems`, which must not blank their slots on the final page.
        var slotsFrozen = false
        var ending: Ending?
    }

    static let maxSpansPerFrame = 250
    /// Bars kept between two frames before they are merged (the oldest go past it).
    static let maxSpansBuffered = 4096
    /// Attempts shorter than this, back to back on one row with one outcome, are one bar:
    /// at 20,000 tasks/s each is far below a pixel, and drawing them one by one would cost
    /// the browser (and the machine running the scan) for nothing.
    static let tinyMilliseconds = 50
    static let recentSpans = 2000
    static let maxFailures = 20
    static let maxErrorBytes = 400
    static let historySeconds = 300
    static let rateWindow = 5.0

    let started = ContinuousClock.now
    let state: Locked<State>

    /// A board for a scan of `total` tasks (`resumed` more came from a journal).
    package init(total: Int, resumed: Int = 0, systems: [System]) {
        var state = State(report: ScanReport(total: total), resumed: resumed)
        // A name given twice keeps its first row.
        for system in systems where state.rowIndex[system.name] == nil {
            state.rowIndex[system.name] = state.rows.count
            state.rows.append(Row(system: system, state: system.isLocal ? .local : .connecting))
        }
        self.state = Locked(state)
    }

    /// Milliseconds since the board was made.
    var now: Int { Int((ContinuousClock.now - started).seconds * 1000) }

    package func record(_ event: ScanEvent) {
        let time = now
        state.withLock { state in
            switch event {
            case .started(let task, let system, _, let attempt):
                if let stale = state.running.removeValue(forKey: task.input) { state.free(stale) }  // a `busy` bounce
                let lane = state.takeLane(on: system)
                state.running[task.input] = Running(system: system, lane: lane, start: time, attempt: attempt)
                if attempt > 1 { state.report.systems[system, default: SystemTally()].reruns += 1 }
            case .completed(let task, _, let system, _, _, let seconds):
                state.end(task.input, .done, at: time)
                state.report.systems[system, default: SystemTally()].completed += 1
                state.report.systems[system, default: SystemTally()].busySeconds += seconds
                state.countCompletion(atSecond: time / 1000)
            case .rerun(let task, let attempt, let system, let error):
                state.report.reruns += 1
                state.fail(Failure(time: time, sector: task.input, system: system, attempt: attempt,
                                   error: Self.shortened("\(error)"), gaveUp: false))
            case .gaveUp(let task, let attempts, let system, _, let error):
                state.report.gaveUp += 1
                state.fail(Failure(time: time, sector: task.input, system: system, attempt: attempts,
                                   error: Self.shortened("\(error)"), gaveUp: true))
            }
        }
    }

    package func record(_ event: ClusterEvent) {
        if case .tooManyAddresses = event { return }  // about a group, which has no row
        state.withLock { state in
            if case .discovered(let name, _, _, let address) = event, state.rowIndex[name] == nil {
                // A new member of an address group: its row shows the address it was found at.
                state.rowIndex[name] = state.rows.count
                state.rows.append(.init(system: .init(name: name, address: address), state: .connecting))
            }
            let index = state.row(named: event.peer)
            switch event {
            case .connected(_, let link):
                state.rows[index].state = .connected
                state.rows[index].detail = ""
                state.rows[index].link = link
            case .responsive, .returned: state.rows[index].state = .connected; state.rows[index].detail = ""
            case .unresponsive: state.rows[index].state = .unresponsive
            case .disconnected(_, let reason): state.rows[index].state = .gone; state.rows[index].detail = reason
            case .unreachable(_, _, let error): state.rows[index].state = .unreachable; state.rows[index].detail = error
            case .sshUnreachable(_, _, let reason, _): state.rows[index].state = .unreachable; state.rows[index].detail = reason
            case .shippingAgain(_, let reason): state.rows[index].detail = reason
            case .refused(_, let code, _):
                state.rows[index].state = code == .unauthorized ? .unauthorized : .refused
                state.rows[index].detail = event.refusalHint
            case .unauthorized(_, let reason): state.rows[index].state = .unauthorized; state.rows[index].detail = reason
            case .lacksJob: state.rows[index].state = .lacksJob; state.rows[index].detail = event.refusalHint
            case .jobDiffers: state.rows[index].detail = event.description
            case .actorsDiffer: state.rows[index].state = .refused; state.rows[index].detail = event.description
            case .draining(_, let reason): state.rows[index].state = .draining; state.rows[index].detail = reason
            case .discovered, .tooManyAddresses: break
            }
        }
    }

    /// The slots of every system now (from `Systems.slotUse`): capacity and running.
    package func update(_ slots: [SlotUse]) {
        state.withLock { state in
            guard !state.slotsFrozen else { return }  // the end's picture stays as it was
            for use in slots { state.rows[state.row(named: use.name)].slots = use }
        }
    }

    /// The scan's tasks are over (its peers are about to be let go): slot updates stop here.
    package func freezeSlots() {
        state.withLock { $0.slotsFrozen = true }
    }

    /// The scan ended: attempts still running are cancelled, and the tallies become the
    /// coordinator's `report` (so `/state` agrees with `summary`, the `--json` summary event).
    package func finish(_ report: ScanReport, summary: JSONLine) {
        let time = now
        state.withLock { state in
            state.slotsFrozen = true
            for sector in Array(state.running.keys) { state.end(sector, .cancelled, at: time) }
            state.report = report
            for index in state.rows.indices {
                let slots = state.rows[index].slots
                state.rows[index].slots = SlotUse(name: slots.name, capacity: slots.capacity, inFlight: 0, suspended: slots.suspended,
                                                  draining: slots.draining)
            }
            let completed = report.completed + state.resumed
            let (how, message): (String, String) =
                report.interrupted ? ("stopped", "Stopped: \(completed) completed, \(report.gaveUp) failed, \(report.notRun) not run")
                : report.gaveUp > 0 ? ("failed", "Finished: \(completed) completed, \(report.gaveUp) failed")
                : ("completed", "Done: all \(completed) tasks completed")
            state.ending = Ending(time: time, how: how, message: message, summary: summary)
        }
    }

    /// The bars with every run of tiny attempts on one row (each shorter than
    /// `tinyMilliseconds`, less than that apart, one outcome) merged into one bar.
    static func coalesce(_ spans: [Span]) -> [Span] {
        struct Place: Hashable { let system: String; let lane: Int }
        var merged: [Span] = []
        var lastOnRow: [Place: Int] = [:]
        for span in spans {
            let row = Place(system: span.system, lane: span.lane)
            if span.isTiny, let index = lastOnRow[row], merged[index].outcome == span.outcome,
               merged[index].isTiny || merged[index].count > 1, span.start - merged[index].end < tinyMilliseconds {
                merged[index].end = max(merged[index].end, span.end)
                merged[index].count += span.count
            } else {
                lastOnRow[row] = merged.count
                merged.append(span)
            }
        }
        return merged
    }

    /// Whether `finish` has been called.
    package var isFinished: Bool { state.withLock { $0.ending != nil } }

    /// An error's text cut to a bounded size (a command's error may quote its output).
    static func shortened(_ text: String) -> String {
        guard text.utf8.count > maxErrorBytes else { return text }
        return String(decoding: text.utf8.prefix(maxErrorBytes), as: UTF8.self) + "…"
    }
}

extension ScanBoard.State {
    /// The row of the system called `name`, added if it is new (bounded: the coordinator's
    /// systems are its cluster's).
    mutating func row(named name: String) -> Int {
        if let index = rowIndex[name] { return index }
        rowIndex[name] = rows.count
        rows.append(.init(system: .init(name: name, address: ""), state: .connected))
        return rows.count - 1
    }

    /// The lowest free slot row of `system`.
    mutating func takeLane(on system: String) -> Int {
        let index = row(named: system)
        if let free = rows[index].lanes.firstIndex(of: false) {
            rows[index].lanes[free] = true
            return free
        }
        rows[index].lanes.append(true)
        return rows[index].lanes.count - 1
    }

    mutating func free(_ running: ScanBoard.Running) {
        let index = row(named: running.system)
        if rows[index].lanes.indices.contains(running.lane) { rows[index].lanes[running.lane] = false }
    }

    /// Ends the running attempt at `sector` as a bar of the task stream.
    mutating func end(_ sector: Int, _ outcome: ScanBoard.Outcome, at time: Int) {
        guard let running = running.removeValue(forKey: sector) else { return }
        free(running)
        let span = ScanBoard.Span(system: running.system, lane: running.lane, start: running.start, end: time,
                                  outcome: outcome, sector: sector, attempt: running.attempt)
        spans.append(span)
        if recent.count < ScanBoard.recentSpans {
            recent.append(span)
        } else {
            recent[recentStart] = span
            recentStart = (recentStart + 1) % ScanBoard.recentSpans
        }
        // Keep the newest; halve in one step so that trimming costs O(1) per bar.
        if spans.count >= ScanBoard.maxSpansBuffered {
            spansOmitted += spans.count / 2
            spans.removeFirst(spans.count / 2)
        }
    }

    mutating func countCompletion(atSecond second: Int) {
        advanceHistory(to: second)
        // Events are stamped before the lock is taken: one may be a bucket late.
        let index = second - historyStart
        if perSecond.indices.contains(index) { perSecond[index] += 1 }
    }

    /// Makes `second` the history's last bucket, dropping the oldest past `historySeconds`.
    mutating func advanceHistory(to second: Int) {
        if perSecond.isEmpty { historyStart = second; perSecond = [0] }
        while historyStart + perSecond.count - 1 < second { perSecond.append(0) }  // a second without completions
        if perSecond.count > ScanBoard.historySeconds {
            let excess = perSecond.count - ScanBoard.historySeconds
            perSecond.removeFirst(excess)
            historyStart += excess
        }
    }

    /// Ends a failed attempt (re-run, or given up) and lists it with the last failures.
    mutating func fail(_ failure: ScanBoard.Failure) {
        end(failure.sector, failure.gaveUp ? .failed : .rerun, at: failure.time)
        report.systems[failure.system, default: SystemTally()].failed += 1
        failures.append(failure)
        if failures.count > ScanBoard.maxFailures { failures.removeFirst() }
    }
}

extension ScanBoard {
    /// What the board shows of a system's link; the raw value is the `state` of its row in
    /// `/events` and `/state`, which the page shows as it is.
    enum RowState: String {
        case local, connecting, connected, unresponsive, draining, gone, unreachable, unauthorized, refused
        case lacksJob = "lacks job"
    }
}
