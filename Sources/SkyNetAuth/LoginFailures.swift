import SkyNetRuntime

/// Failed logins (a wrong or missing token, a wrong proof) by network prefix and over the whole
/// node, so that guessers are answered ever more slowly and said in the log, in bounded memory.
///
/// Failures are counted by prefix (/24 for IPv4, /64 for IPv6: one host or one customer), not
/// by address, since one attacker easily holds many addresses of one network. The first
/// `backoff.freeFailures` of a prefix within `window` cost nothing (a typo); after that, every
/// hello from that prefix waits `backoff.delays.first`, doubling up to `delays.most`, before it is
/// answered at all, right or wrong: so closing early tells a guesser nothing. Over the whole
/// node, failures beyond `backoff.nodeWideBurst` coming faster than
/// `nodeWideFailuresPerSecond` make every hello, from any prefix, wait `delays.most` until they
/// have drained at that rate: a guesser with many networks gets no free failures either. With at most `Node.Options.maxHandshakes`
/// handshakes at once, that bounds guessing to about `maxHandshakes / delays.most` a second.
/// A success does not clear a count (an attacker could share the network of a real
/// coordinator, or of an SSH tunnel's end): failures age out after a quiet `window`.
///
/// Logging is per burst, never per failure (`LoginFailures+Log.swift`).
package struct LoginFailures: Sendable {
    struct Entry: Sendable {
        var count: Int
        var last: ContinuousClock.Instant
        /// The lines about this prefix (`LoginFailures+Log.swift`).
        var log = LogBurst()
    }

    /// What became of one failure: the count of its prefix, the wait its hellos get from now on,
    /// whether the refusal itself is worth a line (the free ones and the first slowed one), and
    /// the lines to log.
    package struct Verdict: Sendable {
        let count: Int
        let delay: Duration
        package let logRefusal: Bool
        package let lines: [String]
    }

    static let window: Duration = .seconds(60)
    static let maxPrefixes = 1024

    let backoff: LoginBackoff
    /// By prefix; at most `maxPrefixes`. (Set here and by the log's flush only.)
    var entries: [String: Entry] = [:]
    /// Node-wide failures as a leaky bucket: +1 a failure, draining at the allowed rate.
    private(set) var level: Double = 0
    private var levelAt: ContinuousClock.Instant?
    /// Set when the level passed the burst; it holds every hello back until the level has
    /// drained to nothing (not merely under the burst, which would let guesses through in
    /// spurts at its edge).
    private var holding = false
    /// The node-wide burst being reported (`LoginFailures+Log.swift`).
    var nodeWide = LogBurst()
    /// Every failure ever counted (`skynet_login_failures_total`): never decreases.
    package private(set) var total = 0

    package init(backoff: LoginBackoff) {
        self.backoff = backoff
    }

    /// How long a hello from `address` waits before it is answered.
    package func delay(for address: String, now: ContinuousClock.Instant) -> Duration {
        if isOverNodeWideBound(now: now) { return backoff.delays.most }
        guard let entry = entries[Self.prefix(of: address)], now - entry.last < Self.window else { return .zero }
        return delay(after: entry.count)
    }

    /// Counts a failure from `address`, for its prefix and for the node.
    package mutating func record(_ address: String, now: ContinuousClock.Instant) -> Verdict {
        total += 1
        let prefix = Self.prefix(of: address)
        var entry = entries[prefix].flatMap { now - $0.last < Self.window ? $0 : nil } ?? Entry(count: 0, last: now)
        if entries[prefix] == nil, entries.count >= Self.maxPrefixes { makeRoom(now: now) }
        entry.count += 1
        entry.last = now
        let before = drained(now: now)
        if before == 0 { holding = false }
        level = before + 1
        levelAt = now
        if level > Double(backoff.nodeWideBurst) { holding = true }
        let overall = isOverNodeWideBound(now: now)
        let delay = overall ? backoff.delays.most : delay(after: entry.count)
        var lines: [String] = []
        if overall {
            if let line = countNodeWide(now: now, delay: delay) { lines.append(line) }
        } else if let line = Self.prefixLine(&entry, prefix: prefix, now: now, delay: delay, slowed: entry.count > backoff.freeFailures) {
            lines.append(line)
        }
        entries[prefix] = entry
        // The free refusals are logged, and the first slowed one beside the line saying so.
        let logRefusal = delay == .zero || (!overall && entry.count == backoff.freeFailures + 1)
        return Verdict(count: entry.count, delay: delay, logRefusal: logRefusal, lines: lines)
    }

    /// Whether failures node-wide came faster than allowed, past the burst, and have not
    /// drained away since.
    func isOverNodeWideBound(now: ContinuousClock.Instant) -> Bool {
        holding && drained(now: now) > 0
    }

    /// The bucket's level at `now`: what it held, less what drained since.
    private func drained(now: ContinuousClock.Instant) -> Double {
        guard let levelAt else { return 0 }
        return max(0, level - (now - levelAt).seconds * backoff.nodeWideFailuresPerSecond)
    }

    /// The wait after `count` failures of a prefix: none for the free ones, then doubling to the cap.
    private func delay(after count: Int) -> Duration {
        let slowed = count - backoff.freeFailures
        guard slowed > 0 else { return .zero }
        return backoff.delays.delay(after: slowed)
    }

    /// Drops the entries past the window; if that frees nothing, the eighth that failed
    /// longest ago: so a flood of new networks costs a sort every 128 of them, not a scan of
    /// the table each.
    private mutating func makeRoom(now: ContinuousClock.Instant) {
        entries = entries.filter { now - $0.value.last < Self.window }
        guard entries.count >= Self.maxPrefixes else { return }
        let oldest = entries.sorted { $0.value.last < $1.value.last }.prefix(Self.maxPrefixes / 8)
        for (prefix, _) in oldest { entries[prefix] = nil }
    }

    /// The network an address belongs to, as failures are counted: `a.b.c.0/24` for IPv4 (an
    /// IPv4-mapped IPv6 address included), the first four groups and `::/64` for IPv6; anything
    /// else (not an address) stands for itself.
    package static func prefix(of address: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return ipv4Prefix(withUnsafeBytes(of: &v4) { Array($0) }) }
        var v6 = in6_addr()
        let host = address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
        guard inet_pton(AF_INET6, host.split(separator: "%").first.map(String.init) ?? host, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return ipv4Prefix(Array(bytes[12...])) }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    private static func ipv4Prefix(_ bytes: [UInt8]) -> String {
        "\(bytes[0]).\(bytes[1]).\(bytes[2]).0/24"
    }
}

/// How a node slows the answers to repeated failed logins.
package struct LoginBackoff: Sendable {
    /// Failures of one prefix within a minute answered at once.
    package var freeFailures = 3
    /// The waits after the free failures. A node holds a slowed hello on its reader that long,
    /// and adds the wait to the connection's hello bound.
    package var delays = Backoff(first: .milliseconds(250), most: .seconds(2))
    /// Node-wide, failures beyond this many, coming faster than `nodeWideFailuresPerSecond`,
    /// make every hello wait `delays.most`.
    package var nodeWideBurst = 32
    package var nodeWideFailuresPerSecond: Double = 8
    package init() {}
}
