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
    /// When pushed-out connections were last logged (once per burst, not per connection).
    var lastEvictionLog: ContinuousClock.Instant?
    var evictedSinceLog = 0

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
}

extension Node {
    /// A new connection joins the budget of those owing a hello, pushing out the oldest if full:
    /// so silent connections can never lock a real client out, however many there are.
    func admitPending(_ session: NodeSession) {
        let address = Self.address(of: session.connection.peer)
        let now = ContinuousClock.now
        let (evicted, report) = admission.withLock { admission -> ([NodeSession], Int?) in
            let evicted = admission.add(session, address: address, now: now, maxPending: options.maxPendingConnections,
                                        maxPerAddress: options.maxPendingPerAddress)
            guard !evicted.isEmpty else { return (evicted, nil) }
            admission.evictedSinceLog += evicted.count
            if let last = admission.lastEvictionLog, now - last < .seconds(10) { return (evicted, nil) }
            admission.lastEvictionLog = now
            defer { admission.evictedSinceLog = 0 }
            return (evicted, admission.evictedSinceLog)
        }
        for old in evicted { old.connection.close() }
        if let report {
            log("[Node] Closed \(report) connection(s) that had not said hello, to make room (at most "
                + "\(options.maxPendingConnections) wait for a hello, \(options.maxPendingPerAddress) per address)")
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
        let (late, idle) = admission.withLock { admission in
            (admission.pending.values.filter { now - $0.since >= options.helloTimeout }.map(\.session),
             Array(admission.greeted.values))
        }
        for session in late { session.connection.close() }
        for session in idle where session.closeIfIdle(now: now, bound: options.idleTimeout) {}
    }

    /// The host part of `host:port` (IPv6 hosts keep their colons).
    static func address(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}
