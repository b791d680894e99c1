import SkyNetRuntime

/// The log of failed logins, per burst and never per failure: a guesser's thousands of tries
/// are a handful of lines. A prefix's first slowed failure is said at once; the failures after
/// it are summed and said at most every `logInterval` (by the next failure, or by the node's
/// sweeper once the interval has passed). While the node-wide bound holds every hello back,
/// one node-wide line stands for all prefixes.
extension LoginFailures {
    static let logInterval: Duration = .seconds(10)

    /// The node-wide burst: when it was last said and how many failures since.
    struct NodeWideLog: Sendable {
        var lastLog: ContinuousClock.Instant?
        var unlogged = 0

        /// Counts a failure over the node-wide bound; returns the line to log, if one is due.
        package mutating func count(now: ContinuousClock.Instant, delay: Duration, backoff: LoginBackoff) -> String? {
            if lastLog.map({ unlogged == 0 && now - $0 >= LoginFailures.logInterval }) ?? true {
                lastLog = now
                return "[Node] Over \(backoff.nodeWideBurst) failed logins, faster than "
                    + "\(String(cFormat: "%g", backoff.nodeWideFailuresPerSecond)) a second from any networks: "
                    + "every hello is now answered after \(LoginFailures.seconds(delay)) s"
            }
            unlogged += 1
            return flush(now: now)
        }

        /// The line summing the failures since the last one, once `logInterval` has passed.
        package mutating func flush(now: ContinuousClock.Instant) -> String? {
            guard unlogged > 0, let last = lastLog, now - last >= LoginFailures.logInterval else { return nil }
            defer { unlogged = 0; lastLog = now }
            return "[Node] \(unlogged) more failed logins in the last \(LoginFailures.seconds(now - last)) s, from any networks"
        }
    }

    /// Right tokens sent in plain text: one warning per `logInterval`, the others counted.
    struct PlainTextLog: Sendable {
        var lastLog: ContinuousClock.Instant?
        var unlogged = 0

        /// Whether to warn about this one now (with how many were counted since the last
        /// warning), or nil: counted for the next line.
        mutating func warnNow(now: ContinuousClock.Instant) -> Int? {
            if let last = lastLog, now - last < LoginFailures.logInterval {
                unlogged += 1
                return nil
            }
            defer { unlogged = 0; lastLog = now }
            return unlogged
        }

        package mutating func flush(now: ContinuousClock.Instant) -> String? {
            guard unlogged > 0, let last = lastLog, now - last >= LoginFailures.logInterval else { return nil }
            defer { unlogged = 0; lastLog = now }
            return "[Node] Warning: \(unlogged) more hellos sent the token in plain text in the last "
                + "\(LoginFailures.seconds(now - last)) s"
        }
    }

    /// The line for a failure of `prefix`, if one is due; updates the entry's log state.
    static func prefixLine(_ entry: inout Entry, prefix: String, now: ContinuousClock.Instant, delay: Duration,
                           slowed: Bool) -> String? {
        guard slowed else { return nil }  // a free failure's refusal is logged on its own
        guard let last = entry.lastLog else {
            entry.lastLog = now
            entry.unlogged = 0
            return "[Node] \(entry.count) failed logins from \(prefix) within \(Int(window.seconds)) s: "
                + "its hellos are now answered after \(seconds(delay)) s"
        }
        entry.unlogged += 1
        guard now - last >= logInterval else { return nil }
        return summary(&entry, prefix: prefix, now: now)
    }

    private static func summary(_ entry: inout Entry, prefix: String, now: ContinuousClock.Instant) -> String? {
        guard entry.unlogged > 0, let last = entry.lastLog else { return nil }
        defer { entry.unlogged = 0; entry.lastLog = now }
        return "[Node] \(entry.unlogged) more failed logins from \(prefix) in the last \(seconds(now - last)) s"
    }

    /// Whether a right token sent in plain text is warned about now, with how many more were
    /// since the last warning; nil: it is counted for a later line.
    package mutating func warnAboutPlainText(now: ContinuousClock.Instant) -> Int? {
        plainText.warnNow(now: now)
    }

    /// The summed lines whose interval has passed: the sweeper calls this about once a second.
    package mutating func flush(now: ContinuousClock.Instant) -> [String] {
        var lines: [String] = []
        for (prefix, entry) in entries where entry.unlogged > 0 {
            guard let last = entry.lastLog, now - last >= Self.logInterval else { continue }
            var entry = entry
            if let line = Self.summary(&entry, prefix: prefix, now: now) { lines.append(line) }
            entries[prefix] = entry
        }
        if let line = nodeWide.flush(now: now) { lines.append(line) }
        if let line = plainText.flush(now: now) { lines.append(line) }
        return lines
    }

    /// Seconds as the log says them: `0.25`, `2`, `10`.
    static func seconds(_ duration: Duration) -> String {
        String(cFormat: "%g", (duration.seconds * 100).rounded() / 100)
    }
}
