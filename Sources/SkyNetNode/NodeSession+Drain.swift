import SkyNetRuntime
import SkyNetWire

/// Where a client stands with the one `draining` line a drain sends it.
enum DrainNotice: Sendable {
    case none
    /// Owed once the welcome went out: the drain's timeout in seconds.
    case owed(Double)
    case sent
}

extension NodeSession {
    /// Tells the client the node drains (`{"type":"draining","timeout":S}`), once: at once if
    /// its welcome went out, else right after the welcome (a `draining` line never precedes it).
    func tellDraining(timeout: Double) {
        let now: Bool = state.withLock { state in
            guard case .none = state.drainNotice else { return false }
            guard state.welcomed else {
                state.drainNotice = .owed(timeout)
                return false
            }
            state.drainNotice = .sent
            return true
        }
        if now { send(Reply.draining(timeout: timeout).line) }
    }

    /// The welcome went out: sends a `draining` line a drain owed the client meanwhile.
    func welcomeSent() {
        let owed = state.withLock { state -> Double? in
            state.welcomed = true
            guard case .owed(let timeout) = state.drainNotice else { return nil }
            state.drainNotice = .sent
            return timeout
        }
        if let owed { send(Reply.draining(timeout: owed).line) }
    }

    /// Whether the client has its `draining` line (or its connection ended) and nothing waits
    /// in the connection's queue.
    var hasSentItsLastLines: Bool {
        let told = state.withLock { if case .sent = $0.drainNotice { true } else { false } }
        return (told || connection.closed.current != nil) && connection.queuedBytes == 0
    }

    /// Cancels every task and upload of this connection (a drain's timeout ran out): each
    /// running task replies `failure cancelled`, so its coordinator runs it elsewhere.
    func cancelAll() {
        let (scans, uploads) = state.withLock { (Array($0.scans.values), Array($0.uploads.keys)) }
        for scan in scans { scan.cancel() }
        for id in uploads { cancelUpload(id) }
    }
}
