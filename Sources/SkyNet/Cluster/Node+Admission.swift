import Foundation

/// Which connections a node holds: those still owing their hello, on a small budget of their
/// own, and the clients that completed it, up to `maxConnections`. One value behind one lock.
struct Admission: Sendable {
    struct Pending: Sendable {
        let session: NodeSession
        let address: String
        let since: ContinuousClock.Instant
        /// Accept order: the smallest is the oldest.
        let order: Int
    }

    var pending: [ObjectIdentifier: Pending] = [:]
    var greeted: [ObjectIdentifier: NodeSession] = [:]
    var accepted = 0
    /// When pushed-out connections were last logged (at most once per `evictionLogInterval`,
    /// not per connection), and how many were pushed out since: the next line reports them
    /// all, from a new eviction or from the sweeper once the interval has passed.
    var lastEvictionLog: ContinuousClock.Instant?
    var evictedSinceLog = 0
    static let evictionLogInterval: Duration = .seconds(10)

    /// Adds a new connection; returns the ones it pushes out of the budget (the oldest overall,
    /// or the oldest of its own address).
    mutating func add(_ session: NodeSession, address: String, now: ContinuousClock.Instant,
                      maxPending: Int, maxPerAddress: Int) -> [NodeSession] {
        var evicted: [NodeSession] = []
        let fromAddress = pending.values.filter { $0.address == address }
        if fromAddress.count >= max(1, maxPerAddress), let oldest = fromAddress.min(by: { $0.order < $1.order }) {
            pending[ObjectIdentifier(oldest.session)] = nil
            evicted.append(oldest.session)
        }
        if pending.count >= max(1, maxPending), let oldest = pending.values.min(by: { $0.order < $1.order }) {
            pending[ObjectIdentifier(oldest.session)] = nil
            evicted.append(oldest.session)
        }
        accepted += 1
        pending[ObjectIdentifier(session)] = Pending(session: session, address: address, since: now, order: accepted)
        return evicted
    }

    /// Counts `evicted` more pushed-out connections; returns how many to log now (all not yet
    /// logged), or nil while the last line is more recent than the interval or none are left.
    mutating func evictionReport(adding evicted: Int, now: ContinuousClock.Instant) -> (count: Int, first: Bool)? {
        evictedSinceLog += evicted
        guard evictedSinceLog > 0 else { return nil }
        if let last = lastEvictionLog, now - last < Self.evictionLogInterval { return nil }
        defer {
            lastEvictionLog = now
            evictedSinceLog = 0
        }
        return (evictedSinceLog, lastEvictionLog == nil)
    }
}

extension Node {
    /// A new connection joins the budget of those owing a hello, pushing out the oldest if full:
    /// so silent connections can never lock a real client out, however many there are.
    func admitPending(_ session: NodeSession) {
        let address = Self.address(of: session.connection.peer)
        let now = ContinuousClock.now
        let (evicted, report) = admission.withLock { admission in
            let evicted = admission.add(session, address: address, now: now, maxPending: options.maxPendingConnections,
                                        maxPerAddress: options.maxPendingPerAddress)
            return (evicted, evicted.isEmpty ? nil : admission.evictionReport(adding: evicted.count, now: now))
        }
        for old in evicted { old.connection.close() }
        if let report { logEvictions(report) }
    }

    /// One line for every connection pushed out since the last: the first says the budget,
    /// the later ones how many more (a burst is summed, never left out).
    func logEvictions(_ report: (count: Int, first: Bool)) {
        if report.first {
            log("[Node] Closed \(report.count) connection(s) that had not said hello, to make room (at most "
                + "\(options.maxPendingConnections) wait for a hello, \(options.maxPendingPerAddress) per address); "
                + "more are summed and logged at most every \(Int(Admission.evictionLogInterval.seconds)) s")
        } else {
            log("[Node] Closed \(report.count) more connection(s) that had not said hello, to make room")
        }
    }

    /// A session completed its hello: it becomes a client if there is room.
    func admitGreeted(_ session: NodeSession) -> Bool {
        admission.withLock { admission in
            let key = ObjectIdentifier(session)
            guard admission.pending.removeValue(forKey: key) != nil else { return false }  // pushed out meanwhile
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
        }
    }

    /// Closes connections past their hello deadline, and clients silent past the idle bound.
    func sweep() {
        let now = ContinuousClock.now
        let (late, idle, report) = admission.withLock { admission in
            (admission.pending.values.filter { now - $0.since >= options.helloTimeout }.map(\.session),
             Array(admission.greeted.values),
             admission.evictionReport(adding: 0, now: now))  // the rest of a burst, once its interval passed
        }
        if let report { logEvictions(report) }
        for session in late { session.connection.close() }
        for session in idle where session.closeIfIdle(now: now, bound: options.idleTimeout) {}
    }

    /// The host part of `host:port` (IPv6 hosts keep their colons).
    static func address(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}
