import SkyNetRuntime

/// Checks of returned files run on a few threads of their own (each hashes one file at a
/// time), their verdicts taken back by ticket: a resume reads its journal on one thread while
/// two others hash. It holds only what was submitted and not taken back; the caller bounds that
/// (`ScanJournal.ResumeFiles` takes each verdict before it submits more than a window of them).
final class FileCheckPool: Sendable {
    /// A check: nil when the files are as recorded, else why not.
    typealias Check = @Sendable () -> String?

    /// What a check found.
    enum Verdict: Sendable, Equatable {
        case intact
        case changed(String)
    }

    private struct State {
        var queue: [(ticket: Int, check: Check)] = []
        var verdicts: [Int: Verdict] = [:]
        var nextTicket = 0
        var closed = false
    }

    private let state = Guarded(State())

    /// Starts `workers` threads; they end when `close()` is called.
    init(workers: Int) {
        for _ in 0..<max(1, workers) {
            startThread(named: "journal-check") { [state] in Self.work(state) }
        }
    }

    deinit { close() }

    /// Queues `check`; its verdict is taken with `verdict(_:)` and the ticket returned.
    func submit(_ check: @escaping Check) -> Int {
        state.withLock { state in
            let ticket = state.nextTicket
            state.nextTicket += 1
            state.queue.append((ticket, check))
            return ticket
        }
    }

    /// Waits for the verdict of `ticket` and takes it. Blocks: a thread of our own.
    func verdict(_ ticket: Int) -> Verdict {
        state.wait(while: { $0.verdicts[ticket] == nil }) { state, _ in
            // Present: the wait ends only once it is (there is no deadline).
            state.verdicts.removeValue(forKey: ticket) ?? .intact
        }
    }

    /// Ends the workers once their current check is done; queued checks are dropped.
    func close() {
        state.withLock { state in
            state.closed = true
            state.queue.removeAll()
        }
    }

    /// A worker: takes the oldest check, runs it without the lock, files its verdict.
    private static func work(_ state: Guarded<State>) {
        while true {
            let next = state.wait(while: { $0.queue.isEmpty && !$0.closed }) { state, _ in
                state.closed ? nil : state.queue.removeFirst()
            }
            guard let (ticket, check) = next else { return }
            let verdict: Verdict = check().map { .changed($0) } ?? .intact
            state.withLock { $0.verdicts[ticket] = verdict }
        }
    }
}
