import Foundation

/// Failed logins (a wrong or missing token) by address, so repeated failures from one address
/// are answered ever more slowly and said in the log, without remembering more than
/// `maxAddresses` of them.
///
/// The first `backoff.freeFailures` within `window` are answered at once (a typo costs
/// nothing); after that each refusal waits `backoff.firstDelay`, doubling up to `maxDelay`. The delay is kept under
/// the node's hello deadline, and a node holds at most 16 connections per address that have
/// not completed a hello: so one address gets at most 8 guesses a second, and a guess at a
/// 16-byte random token is hopeless anyway. A login that succeeds clears its address.
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

    /// Counts a failure from `address`. Returns how long its refusal waits, the failures counted
    /// within the window, and whether to log that (the first slowed one, then at 8, 16, 32, …).
    mutating func record(_ address: String, now: ContinuousClock.Instant) -> (delay: Duration, count: Int, log: Bool) {
        var entry = entries[address].flatMap { now - $0.last < Self.window ? $0 : nil } ?? Entry(count: 0, last: now)
        if entries[address] == nil, entries.count >= Self.maxAddresses { makeRoom(now: now) }
        entry.count += 1
        entry.last = now
        entries[address] = entry
        let slowed = entry.count - backoff.freeFailures
        guard slowed > 0 else { return (.zero, entry.count, false) }
        let delay = min(backoff.maxDelay, backoff.firstDelay * (1 << min(slowed - 1, 8)))
        let log = slowed == 1 || (entry.count >= 8 && entry.count & (entry.count - 1) == 0)
        return (delay, entry.count, log)
    }

    mutating func succeeded(_ address: String) {
        entries[address] = nil
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
