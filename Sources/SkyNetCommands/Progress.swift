import SkyNetRuntime
import SkyNetScheduler

/// The live progress line of a scan on stderr, redrawn in place ten times a second:
/// `37 scheduled  12.30 per sec.  25/100 tasks completed  ETA 0:42  1 failed  3 systems  collaborating`.
///
/// The ETA comes from the rate of the last 20 s (`ETAEstimator`), over the tasks neither
/// completed nor given up; `ETA --:--` until there is enough data. A narrow terminal: `fit`.
///
/// Only for a terminal: `start` returns nil when stderr is not one, or NO_COLOR or --quiet
/// asks for plain output. Every other line goes out behind `Progress.clear` in the same
/// write, and `stop` clears it for good. The counters are guarded by one lock; the line is
/// only ever *offered* to the console's queue (skipped when it is full), so no lock is held
/// across a write that may block and the ticker never waits.
final class Progress: Sendable {
    private struct State: Sendable {
        var scheduled = 0
        var completed = 0
        var failed = 0
        var peers = 0
        /// The peers that said they drain, until their link closes.
        var draining: Set<String> = []
        /// When a peer last completed a task: peers share the work while that is recent.
        var lastRemoteCompletion: ContinuousClock.Instant?
        var eta = ETAEstimator()
        var stopped = false
    }

    private let total: Int
    private let localSystems: Int
    private let started = ContinuousClock.now
    private let state = Locked(State())

    /// A progress line for `total` tasks, or nil when none should be drawn.
    static func start(total: Int, hasLocalSystem: Bool, quiet: Bool) -> Progress? {
        let environment = ProcessInfo.processInfo.environment
        guard !quiet, environment["NO_COLOR"] == nil, isatty(2) == 1 else { return nil }
        let progress = Progress(total: total, localSystems: hasLocalSystem ? 1 : 0)
        Task { [weak progress] in
            while let current = progress, !current.state.withLock({ $0.stopped }) {
                current.draw()
                try? await DeadlineTimer.shared.sleep(for: .milliseconds(100))
            }
        }
        return progress
    }

    private init(total: Int, localSystems: Int) {
        self.total = total
        self.localSystems = localSystems
    }

    /// Erases the line: sent ahead of every other line while a progress line is drawn.
    static let clear = "\r\u{1B}[2K"
    /// `clear` when stderr is a terminal (the line may be drawn already), else nothing.
    static var clearIfTerminal: String { isatty(2) == 1 ? clear : "" }

    /// The width of the terminal on stderr (80 when it cannot be read).
    private static var terminalColumns: Int {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        guard ioctl(2, request, &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    func record(_ event: ScanEvent) {
        state.withLock { state in
            switch event {
            case .started: state.scheduled += 1
            case .completed(_, _, _, let isLocal, _, _):
                state.completed += 1
                if !isLocal { state.lastRemoteCompletion = .now }
            case .rerun: break
            case .gaveUp: state.failed += 1
            }
        }
    }

    func record(_ event: ClusterEvent) {
        state.withLock { state in
            switch event {
            case .connected(let name, _):
                state.peers += 1
                state.draining.remove(name)
            case .disconnected(let name, _):
                state.peers -= 1
                state.draining.remove(name)
            case .draining(let name, _): state.draining.insert(name)
            case .returned(let name, _): state.draining.remove(name)
            default: break
            }
        }
    }

    /// Erases the line for good (the ticker stops drawing first).
    func stop() async {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { await Console.writer.write(Self.clear, to: 2) }
    }

    /// Draws the line if the console's queue has room (else the next tick draws). The offer
    /// is made under the lock, so no line is drawn after `stop`.
    private func draw() {
        state.withLock { state in
            guard !state.stopped else { return }
            let seconds = max(0.001, (ContinuousClock.now - started).seconds)
            state.eta.observe(finished: state.completed + state.failed, at: seconds)
            let systems = localSystems + state.peers
            var fields = [
                "\(state.scheduled) scheduled", "\(String(cFormat: "%.2f", Double(state.completed) / seconds)) per sec.",
                "\(state.completed)/\(total) tasks completed", ETAEstimator.label(state.eta.secondsLeft(total: total, at: seconds)),
                "\(state.failed) failed",
                // `3 systems  1 draining`: one field, so `fit` drops both together.
                "\(systems) system\(systems == 1 ? "" : "s")" + (state.draining.isEmpty ? "" : "  \(state.draining.count) draining"),
            ]
            if let last = state.lastRemoteCompletion, ContinuousClock.now - last < .seconds(2) { fields.append("collaborating") }
            let line = Self.fit(fields, columns: Self.terminalColumns - 1)
            Console.writer.offer(Self.clear + line, to: 2)
        }
    }

    /// The fields joined by two spaces, within `columns`: a line wider than the terminal
    /// would wrap, and only its last row be redrawn. Whole fields go first, least useful
    /// first (the order below), so the count and the ETA stay in view; a line still too wide is cut.
    private static func fit(_ fields: [String], columns: Int) -> String {
        // Indices into `fields` (scheduled, rate, completed, ETA, failed, systems, collaborating), dropped first to last.
        var kept = Array(fields.indices)
        for index in [6, 0, 5, 1, 4] {
            guard kept.map({ fields[$0].count }).reduce(2 * (kept.count - 1), +) > columns else { break }
            kept.removeAll { $0 == index }
        }
        let line = kept.map { fields[$0] }.joined(separator: "  ")
        return String(line.prefix(max(10, columns)))
    }
}

