import SkyNetJournal
import SkyNetRuntime
import SkyNetWork

/// The order `--results` prints in: as tasks complete, or (`--keep-order`) in input order,
/// holding a result until every earlier sector has its outcome.
///
/// The coordinator's order window (`Coordinator.orderWindow`) keeps the held results few: no
/// sector starts while it is that far past the oldest one without an outcome. Each held result
/// is kept once, as the bytes that will be printed, and handed on as they are (no copy on the
/// way to stdout): memory is about the window times `--max-output`. Outcomes arrive one at a
/// time (the coordinator awaits each event); the state is guarded by a lock anyway.
///
/// A resume also prints the results its journal holds that the earlier run had not printed
/// (`journaled`): first of all, or with `--keep-order` each at its turn among the new ones.
final class ResultOrder: Sendable {
    /// What is ready to print.
    enum Ready: Sendable {
        /// The bytes to print: a result and its newline, or (`--keep-order`) a lone newline
        /// for a task that gave up, which keeps its line.
        case line(sector: Int, bytes: [UInt8])
        /// A result of the journal that the earlier run did not print: read back to print it.
        case journaled(ScanJournal.ResultPlace)

        var sector: Int {
            switch self {
            case .line(let sector, _): sector
            case .journaled(let place): place.sector
            }
        }
    }

    private struct State {
        /// The next sector to print.
        var next = 0
        /// Outcomes that came before their turn, as the bytes to print.
        var held: [Int: [UInt8]] = [:]
        /// The next of `journaled` to print.
        var nextJournaled = 0
    }

    /// Whether results wait for their turn.
    let keepsOrder: Bool
    /// Sectors that will not run (a resume skips them): their turn passes at once.
    private let skipped: SectorSet
    /// Sectors among `skipped` whose journaled result was never printed, in sector order.
    private let journaled: [ScanJournal.ResultPlace]
    private let state = Locked(State())

    init(keepsOrder: Bool, skipped: SectorSet, journaled: [ScanJournal.ResultPlace] = []) {
        self.keepsOrder = keepsOrder
        self.skipped = skipped
        self.journaled = journaled
    }

    /// What can be printed before any task has an outcome: every journaled result without
    /// `--keep-order`; with it, those whose turn comes before the first sector that runs.
    func start() -> [Ready] {
        guard keepsOrder else {
            state.withLock { $0.nextJournaled = journaled.count }
            return journaled.map { .journaled($0) }
        }
        return state.withLock { advance(&$0) }
    }

    /// Takes the outcome of `sector` (nil: it gave up) and returns what can be printed now, in
    /// order. A task that gave up prints nothing, unless order is kept: then an empty line.
    func settle(_ sector: Int, result: String?) -> [Ready] {
        guard keepsOrder else { return result.map { [.line(sector: sector, bytes: ScanJournal.printedBytes($0))] } ?? [] }
        let bytes = result.map(ScanJournal.printedBytes) ?? [10]
        return state.withLock { state in
            state.held[sector] = bytes
            return advance(&state)
        }
    }

    /// Takes every result still held (the scan ended, stopped or not, before some earlier
    /// sector had its outcome), journaled ones included, and returns them in input order: the
    /// sectors that never ran simply have no line; the journal and the `Stopped` line say which
    /// did not run.
    func drain() -> [Ready] {
        guard keepsOrder else { return [] }
        return state.withLock { state in
            let held = state.held.map { Ready.line(sector: $0.key, bytes: $0.value) }
            let journaled = self.journaled[state.nextJournaled...].map { Ready.journaled($0) }
            state.held = [:]
            state.nextJournaled = self.journaled.count
            return (held + journaled).sorted { $0.sector < $1.sector }
        }
    }

    /// Moves `next` past every sector whose turn has come and returns what they print.
    private func advance(_ state: inout State) -> [Ready] {
        var ready: [Ready] = []
        while true {
            if state.nextJournaled < journaled.count, journaled[state.nextJournaled].sector == state.next {
                ready.append(.journaled(journaled[state.nextJournaled]))
                state.nextJournaled += 1
                state.next += 1
            } else if skipped.contains(state.next) {
                state.next += 1
            } else if let bytes = state.held.removeValue(forKey: state.next) {
                ready.append(.line(sector: state.next, bytes: bytes))
                state.next += 1
            } else {
                return ready
            }
        }
    }
}
