import SkyNetRuntime

/// The log of failed logins, per burst and never per failure: a guesser's thousands of tries
/// are a handful of lines. A prefix's first slowed failure is said at once; the failures after
/// it are summed and said at most every `LogBurst.interval` (by the next failure, or by the
/// node's sweeper once the interval has passed). While the node-wide bound holds every hello back,
/// one node-wide line stands for all prefixes.
extension LoginFailures {
    /// Counts a failure over the node-wide bound; returns the line to log, if one is due.
    mutating func countNodeWide(now: ContinuousClock.Instant, delay: Duration) -> String? {
        switch nodeWide.count(now: now) {
        case .first:
            "[Node] Over \(backoff.nodeWideBurst) failed logins, faster than "
                + "\(String(cFormat: "%g", backoff.nodeWideFailuresPerSecond)) a second from any networks: "
                + "every hello is now answered after \(Self.seconds(delay)) s"
        case .more(let count, let since): Self.nodeWideSummary(count, since: since)
        case nil: nil
        }
    }

    private static func nodeWideSummary(_ count: Int, since: Duration) -> String {
        "[Node] \(count) more failed logins in the last \(seconds(since)) s, from any networks"
    }

    /// The line for a failure of `prefix`, if one is due; counts it in the entry's burst.
    static func prefixLine(_ entry: inout Entry, prefix: String, now: ContinuousClock.Instant, delay: Duration,
                           slowed: Bool) -> String? {
        guard slowed else { return nil }  // a free failure's refusal is logged on its own
        switch entry.log.count(now: now) {
        case .first:
            return "[Node] \(entry.count) failed logins from \(prefix) within \(Int(window.seconds)) s: "
                + "its hellos are now answered after \(seconds(delay)) s"
        case .more(let count, let since): return summary(count, prefix: prefix, since: since)
        case nil: return nil
        }
    }

    private static func summary(_ count: Int, prefix: String, since: Duration) -> String {
        "[Node] \(count) more failed logins from \(prefix) in the last \(seconds(since)) s"
    }

    /// The summed lines whose interval has passed: the sweeper calls this about once a second.
    package mutating func flush(now: ContinuousClock.Instant) -> [String] {
        var lines: [String] = []
        for (prefix, entry) in entries where entry.log.untold > 0 {
            var entry = entry
            if case .more(let count, let since) = entry.log.flush(now: now) {
                lines.append(Self.summary(count, prefix: prefix, since: since))
            }
            entries[prefix] = entry
        }
        if case .more(let count, let since) = nodeWide.flush(now: now) { lines.append(Self.nodeWideSummary(count, since: since)) }
        return lines
    }

    /// Seconds as the log says them: `0.25`, `2`, `10`.
    static func seconds(_ duration: Duration) -> String {
        String(cFormat: "%g", (duration.seconds * 100).rounded() / 100)
    }
}
