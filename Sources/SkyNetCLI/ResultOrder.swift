import SkyNet

/// The order `--results` prints in: as tasks complete, or (`--keep-order`) in input order,
/// holding a result until every earlier sector has its outcome.
///
/// The coordinator's order window (`Coordinator.orderWindow`) keeps the held results few: no
/// sector starts while it is that far past the oldest one without an outcome. Outcomes arrive
/// one at a time (the coordinator awaits each event); the state is guarded by a lock anyway.
final class ResultOrder: Sendable {
    private struct State {
        /// The next sector to print.
        var next = 0
        /// Outcomes that came before their turn: the result, or nil for a task that gave up.
        var held: [Int: String?] = [:]
    }

    /// Whether results wait for their turn.
    let keepsOrder: Bool
    /// Sectors that will not run (a resume skips them): their turn passes at once.
    private let skipped: SectorSet
    private let state = Locked(State())

    init(keepsOrder: Bool, skipped: SectorSet) {
        self.keepsOrder = keepsOrder
        self.skipped = skipped
    }

    /// Takes the outcome of `sector` (nil: it gave up, so it prints nothing) and returns the
    /// results that can be printed now, in order.
    func settle(_ sector: Int, result: String?) -> [String] {
        guard keepsOrder else { return result.map { [$0] } ?? [] }
        return state.withLock { state in
            state.held[sector] = .some(result)
            var ready: [String] = []
            while true {
                if skipped.contains(state.next) {
                    state.next += 1
                } else if let outcome = state.held.removeValue(forKey: state.next) {
                    if let result = outcome { ready.append(result) }
                    state.next += 1
                } else {
                    return ready
                }
            }
        }
    }

    /// Takes every result still held (the scan ended, stopped or not, before some earlier
    /// sector had its outcome) and returns them in input order: the sectors that never ran
    /// simply have no line; the journal and the `Stopped` line say which did not run.
    func drain() -> [String] {
        guard keepsOrder else { return [] }
        return state.withLock { state in
            defer { state.held = [:] }
            return state.held.sorted { $0.key < $1.key }.compactMap { $0.value }
        }
    }
}
