import SkyNetRuntime

/// The log of failed logins, per burst and never per failure: a guesser's thousands of tries
/// are a handful of lines. A prefix's first slowed failure is said at once; the failures after
/// it are summed and said at most every `logInterval` (by the next failure, or by the node's
/// sweeper once the interval has passed). While the node-wide bound holds every hello back,
/// one node-wide line stands for all prefixes.
extension LoginFailures {
    static let logInterval: Duration = .seconds(10)

    /// One burst as the log tells it (a prefix's, the node-wide one, the plain-text tokens'):
    /// when it was last said and how many since.
    struct BurstLog: Sendable {
        var lastLog: ContinuousClock.Instant?
        var unlogged = 0

        /// How many were counted since the last line, and how long ago that was (as the log
        /// says seconds), once `logInterval` has passed: the count then starts over.
        mutating func due(now: ContinuousClock.Instant) -> (count: Int, seconds: String)? {
            guard unlogged > 0, let last = lastLog, now - last >= LoginFailures.logInterval else { return nil }
            defer { unlogged = 0; lastLog = now }
            return (unlogged, LoginFailures.seconds(now - last))
        }
    }

    /// Counts a failure over the node-wide bound; returns the line to log, if one is due.
    mutating func countNodeWide(now: ContinuousClock.Instant, delay: Duration) -> String? {
        if nodeWide.lastLog.map({ nodeWide.unlogged == 0 && now - $0 >= Self.logInterval }) ?? true {
            nodeWide.lastLog = now
            return "[Node] Over \(backoff.nodeWideBurst) failed logins, faster than "
                + "\(String(cFormat: "%g", backoff.nodeWideFailuresPerSecond)) a second from any networks: "
                + "every hello is now answered after \(Self.seconds(delay)) s"
        }
        nodeWide.unlogged += 1
        return nodeWideSummary(now: now)
    }

    /// The line summing the node-wide failures since the last one, once `logInterval` has passed.
    private mutating func nodeWideSummary(now: ContinuousClock.Instant) -> String? {
        nodeWide.due(now: now).map { "[Node] \($0.count) more failed logins in the last \($0.seconds) s, from any networks" }
    }

    /// The line for a failure of `prefix`, if one is due; updates the entry's log state.
    static func prefixLine(_ entry: inout Entry, prefix: String, now: ContinuousClock.Instant, delay: Duration,
                           slowed: Bool) -> String? {
        guard slowed else { return nil }  // a free failure's refusal is logged on its own
        guard entry.log.lastLog != nil else {
            entry.log = BurstLog(lastLog: now)
            return "[Node] \(entry.count) failed logins from \(prefix) within \(Int(window.seconds)) s: "
                + "its hellos are now answered after \(seconds(delay)) s"
        }
        entry.log.unlogged += 1
        return summary(&entry, prefix: prefix, now: now)
    }

    private static func summary(_ entry: inout Entry, prefix: String, now: ContinuousClock.Instant) -> String? {
        entry.log.due(now: now).map { "[Node] \($0.count) more failed logins from \(prefix) in the last \($0.seconds) s" }
    }

    /// Whether a right token sent in plain text is warned about now, with how many more were
    /// since the last warning; nil: it is counted for a later line.
    package mutating func warnAboutPlainText(now: ContinuousClock.Instant) -> Int? {
        if let last = plainText.lastLog, now - last < Self.logInterval {
            plainText.unlogged += 1
            return nil
        }
        defer { plainText = BurstLog(lastLog: now) }
        return plainText.unlogged
    }

    /// The summed lines whose interval has passed: the sweeper calls this about once a second.
    package mutating func flush(now: ContinuousClock.Instant) -> [String] {
        var lines: [String] = []
        for (prefix, entry) in entries where entry.log.unlogged > 0 {
            var entry = entry
            if let line = Self.summary(&entry, prefix: prefix, now: now) { lines.append(line) }
            entries[prefix] = entry
        }
        if let line = nodeWideSummary(now: now) { lines.append(line) }
        if let due = plainText.due(now: now) {
            lines.append("[Node] Warning: \(due.count) more hellos sent the token in plain text in the last \(due.seconds) s")
        }
        return lines
    }

    /// Seconds as the log says them: `0.25`, `2`, `10`.
    static func seconds(_ duration: Duration) -> String {
        String(cFormat: "%g", (duration.seconds * 100).rounded() / 100)
    }
}
