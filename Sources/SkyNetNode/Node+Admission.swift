import SkyNetRuntime
import SkyNetTransport

/// Which connections a node holds: those still owing their hello, those in the middle of a
/// token handshake, each on a small budget of its own, and the clients that completed it, up
/// to `maxConnections`. One value behind one lock.
///
/// A silent connection can only ever push out another silent one, never one that has sent a
/// valid hello: so however many silent sockets an attacker keeps reconnecting, a client whose
/// hello is held back (its network failed too often) still logs in. Within a budget the one pushed out is the
/// newcomer's own address's oldest when that address is at its cap, else the oldest of the
/// address holding the most: a flood from a few addresses pushes out its own sockets, not a
/// client's single one.
struct Admission: Sendable {
    /// Where a connection stands before it is a client.
    enum Stage: Sendable {
        /// Accepted; no valid hello read yet.
        case silent
        /// A valid hello was read on a node with a token: its answer is under way, or held back.
        case handshake
    }

    struct Pending: Sendable {
        let session: NodeSession
        let address: String
        let since: ContinuousClock.Instant
        /// Accept order: the smallest is the oldest.
        let order: Int
        var stage = Stage.silent
        /// How long the node itself holds the hello back (a slowed login): added to the hello
        /// bound, so that the node's own wait is never the client's lateness.
        var held = Duration.zero
    }

    /// The size of one budget: at most `most` connections, `perAddress` from one address.
    struct Budget: Sendable {
        var most: Int
        var perAddress: Int
    }

    var pending: [ObjectIdentifier: Pending] = [:]
    var greeted: [ObjectIdentifier: NodeSession] = [:]
    /// Every connection from its accept until it ended (also one pushed out of a budget and
    /// still closing), for `skynet_bytes_total`: their bytes so far, plus `closedBytes`.
    var open: [ObjectIdentifier: NodeSession] = [:]
    /// The bytes of the connections that ended, added when each leaves `open`.
    var closedBytes = ByteTally()
    var accepted = 0
    /// Connections closed before their hello, as the log tells them: pushed out of a budget,
    /// or past the hello bound.
    var evictions = LogBurst()
    var lateHellos = LogBurst()

    /// Adds a new (silent) connection; returns the silent ones it pushes out of their budget.
    mutating func add(_ session: NodeSession, address: String, now: ContinuousClock.Instant, budget: Budget) -> [NodeSession] {
        let evicted = makeRoom(in: .silent, for: address, budget: budget, now: now)
        accepted += 1
        open[ObjectIdentifier(session)] = session
        pending[ObjectIdentifier(session)] = Pending(session: session, address: address, since: now, order: accepted)
        return evicted
    }

    /// Moves a connection that sent a valid hello to the handshake budget, where the node holds
    /// its answer back for `held`; returns the connections in their handshake it pushes out
    /// (none while there is room).
    mutating func saidHello(_ session: NodeSession, held: Duration, budget: Budget) -> [NodeSession] {
        let key = ObjectIdentifier(session)
        guard let entry = pending[key], case .silent = entry.stage else { return [] }
        pending[key] = nil  // not a candidate for its own room
        let evicted = makeRoom(in: .handshake, for: entry.address, budget: budget, now: nil)
        pending[key] = Pending(session: session, address: entry.address, since: entry.since, order: entry.order, stage: .handshake,
                                 held: held)
        return evicted
    }

    /// Frees a place in the `stage` budget for one more from `address`: its own oldest when
    /// the address is at its cap, else (when the budget is full) the oldest of the address
    /// holding the most. With `now`, an address's cap holds only once its oldest has waited
    /// `Self.silentGrace`: a burst of clients from one host is accepted faster than their
    /// hellos are read, and its young connections are not pushed out by each other (the
    /// budget over all addresses still holds).
    private mutating func makeRoom(in stage: Stage, for address: String, budget: Budget, now: ContinuousClock.Instant?) -> [NodeSession] {
        var byAddress: [String: [Pending]] = [:]
        var count = 0
        for entry in pending.values where entry.stage == stage {
            byAddress[entry.address, default: []].append(entry)
            count += 1
        }
        let victims: [Pending]? = if let own = byAddress[address], own.count >= max(1, budget.perAddress),
                                     now.map({ now in own.contains { now - $0.since >= Self.silentGrace } }) ?? true {
            own
        } else if count >= max(1, budget.most) {
            // The most crowded address; of equals, the one holding the oldest connection.
            byAddress.values.max { ($0.count, -Self.oldest($0)) < ($1.count, -Self.oldest($1)) }
        } else {
            nil
        }
        guard let oldest = victims?.min(by: { $0.order < $1.order }) else { return [] }
        pending[ObjectIdentifier(oldest.session)] = nil
        return [oldest.session]
    }

    private static func oldest(_ entries: [Pending]) -> Int { entries.map(\.order).min() ?? .max }

    /// How long a silent connection is safe from others of its address (`makeRoom`).
    static let silentGrace = Duration.milliseconds(500)

    /// Takes out the connections still owing their hello `bound` after their accept (plus what
    /// the node held it back): the caller closes them. Taken out here, so the next sweep
    /// cannot count them again while they close.
    mutating func removeLate(now: ContinuousClock.Instant, bound: Duration) -> [NodeSession] {
        let late = pending.values.filter { now - $0.since >= bound + $0.held }
        for entry in late { pending[ObjectIdentifier(entry.session)] = nil }
        return late.map(\.session)
    }
}

extension Node {
    /// A new connection joins the budget of those owing a hello, pushing out a silent one if
    /// full: so silent connections can never lock a real client out, however many there are.
    func admitPending(_ session: NodeSession) {
        let address = Socket.address(of: session.connection.peer)
        evict(most: options.maxPendingConnections) { $0.add(session, address: address, now: $1, budget: $2) }
    }

    /// A connection sent a valid hello, whose answer waits `held`: from now on only another
    /// handshake can push it out.
    func admitHandshake(_ session: NodeSession, held: Duration) {
        evict(most: options.maxHandshakes) { admission, _, budget in admission.saidHello(session, held: held, budget: budget) }
    }

    /// Applies `change` to the budgets, closes the connections it pushed out and logs them.
    private func evict(most: Int, _ change: (inout Admission, ContinuousClock.Instant, Admission.Budget) -> [NodeSession]) {
        let budget = Admission.Budget(most: most, perAddress: options.maxPendingPerAddress)
        let now = clock.now
        let (evicted, report) = admission.withLock { admission in
            let evicted = change(&admission, now, budget)
            return (evicted, evicted.isEmpty ? nil : admission.evictions.count(evicted.count, now: now))
        }
        for old in evicted { old.connection.close() }
        if let report { logEvictions(report) }
    }

    /// One line for every connection pushed out since the last: the first says the budget,
    /// the later ones how many more (a burst is summed, never left out).
    func logEvictions(_ line: LogBurst.Line) {
        switch line {
        case .first(let count):
            log("[Node] Closed \(count) connection(s) that had not finished their hello, to make room (at most "
                + "\(options.maxPendingConnections) wait for a hello and \(options.maxHandshakes) are in a handshake, "
                + "\(options.maxPendingPerAddress) per address each); "
                + "more are summed and logged at most every \(Int(LogBurst.interval.seconds)) s")
        case .more(let count, _):
            log("[Node] Closed \(count) more connection(s) that had not finished their hello, to make room")
        }
    }

    /// A session completed its hello: it becomes a client if there is room (true), or not
    /// (false); nil when it was pushed out meanwhile (its connection is being closed, and was
    /// logged as such).
    func admitGreeted(_ session: NodeSession) -> Bool? {
        admission.withLock { admission in
            let key = ObjectIdentifier(session)
            guard admission.pending.removeValue(forKey: key) != nil else { return nil }
            guard admission.greeted.count < options.maxConnections else { return false }
            admission.greeted[key] = session
            return true
        }
    }

    func forget(_ session: NodeSession) {
        admission.withLock { admission in
            let key = ObjectIdentifier(session)
            admission.pending[key] = nil
            admission.greeted[key] = nil
            // In the same step that drops it from the open ones: counted once, never lost.
            if let ended = admission.open.removeValue(forKey: key) { admission.closedBytes.add(ended.connection) }
        }
    }

    /// Closes connections past their hello deadline, clients silent past the idle bound and
    /// clients that took none of their waiting replies for as long;
    /// logs what the bursts of closes and failed logins added up to.
    func sweep() {
        let now = clock.now
        let (late, idle, evicted, lateReport) = admission.withLock { admission in
            let late = admission.removeLate(now: now, bound: options.helloTimeout)
            return (late, Array(admission.greeted.values),
                    admission.evictions.flush(now: now),  // the rest of a burst, once its interval passed
                    admission.lateHellos.count(late.count, now: now))
        }
        if let evicted { logEvictions(evicted) }
        if let lateReport { logLateHellos(lateReport) }
        for line in logins.withLock({ $0.flush(now: now) }) { log(line) }  // bursts of failed logins, summed
        for session in late { session.connection.close() }
        for session in idle {
            session.closeIfIdle(now: now, bound: options.idleTimeout)
            session.closeIfStalled(now: now, bound: options.idleTimeout)
        }
    }

    /// Like `logEvictions`, for connections closed because their hello did not come in time:
    /// a client on the far side of a slow or stalled link learns only that the link closed.
    private func logLateHellos(_ line: LogBurst.Line) {
        let bound = "within \(String(cFormat: "%g", options.helloTimeout.seconds)) s"
        switch line {
        case .first(let count):
            log("[Node] Closed \(count) connection(s) that had not finished their hello \(bound); "
                + "more are summed and logged at most every \(Int(LogBurst.interval.seconds)) s")
        case .more(let count, _):
            log("[Node] Closed \(count) more connection(s) that had not finished their hello \(bound)")
        }
    }
}
