import Foundation

/// Failed logins (a wrong or missing token, a wrong proof) by address, so that an address that
/// keeps failing is answered ever more slowly and said in the log, without remembering more
/// than `maxAddresses` of them.
///
/// The first `backoff.freeFailures` within `window` cost nothing (a typo); after that, every
/// hello from that address waits `backoff.firstDelay`, doubling up to `maxDelay`, before it is
/// answered at all, right or wrong: so closing early tells a guesser nothing, and with at
/// most 16 unfinished handshakes per address it gets at most 8 guesses a second. A success
/// does not clear the count (an attacker could share the address of a real coordinator, or
/// of an SSH tunnel's end): failures age out after a quiet `window`.
struct LoginFailures: Sendable {
    struct Entry: Sendable {
        var count: Int
        var last: ContinuousClock.Instant
    }

    static let window: Duration = .seconds(60)
    static let maxAddresses = 1024

    let backoff: LoginBackoff
    private(set) var entries: [String: Entry] = [:]

    init(backoff: LoginBackoff) {
        self.backoff = backoff
    }

    /// How long a hello from `address` waits before it is answered.
    func delay(for address: String, now: ContinuousClock.Instant) -> Duration {
        guard let entry = entries[address], now - entry.last < Self.window else { return .zero }
        return delay(after: entry.count)
    }

    /// Counts a failure from `address`. Returns the failures counted within the window, the wait
    /// its hellos get from now on, and whether to log that (the first slowed one, then at 8,
    /// 16, 32, …): the refusals of a slowed address are not logged one by one.
    mutating func record(_ address: String, now: ContinuousClock.Instant) -> (count: Int, delay: Duration, log: Bool) {
        var entry = entries[address].flatMap { now - $0.last < Self.window ? $0 : nil } ?? Entry(count: 0, last: now)
        if entries[address] == nil, entries.count >= Self.maxAddresses { makeRoom(now: now) }
        entry.count += 1
        entry.last = now
        entries[address] = entry
        let slowed = entry.count - backoff.freeFailures
        let log = slowed == 1 || (slowed > 1 && entry.count >= 8 && entry.count & (entry.count - 1) == 0)
        return (entry.count, delay(after: entry.count), log)
    }

    /// The wait after `count` failures: none for the free ones, then doubling to the cap.
    private func delay(after count: Int) -> Duration {
        let slowed = count - backoff.freeFailures
        guard slowed > 0 else { return .zero }
        return min(backoff.maxDelay, backoff.firstDelay * (1 << min(slowed - 1, 8)))
    }

    /// Drops the entries past the window; if none is, the one that failed longest ago.
    private mutating func makeRoom(now: ContinuousClock.Instant) {
        entries = entries.filter { now - $0.value.last < Self.window }
        if entries.count >= Self.maxAddresses, let oldest = entries.min(by: { $0.value.last < $1.value.last }) {
            entries[oldest.key] = nil
        }
    }
}

/// How a node slows the answers to repeated failed logins from one address.
public struct LoginBackoff: Sendable {
    /// Failures within a minute answered at once.
    public var freeFailures = 3
    public var firstDelay: Duration = .milliseconds(250)
    /// Kept under the hello deadline, so a slowed refusal is still sent.
    public var maxDelay: Duration = .seconds(2)
    public init() {}
}
