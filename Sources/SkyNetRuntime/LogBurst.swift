/// Events of one kind that a log tells per burst, never one by one: the first line of a burst
/// comes at once, the events after it are summed into a line at most every `interval`, and none
/// is left out. A burst whose every event was told and that stayed quiet for `interval` is
/// over: the next event begins another, with a first line again.
///
/// The one burst counter of the package: connections a node closed before their hello, failed
/// logins per network and node-wide.
package struct LogBurst: Sendable {
    /// What the log says now.
    package enum Line: Sendable, Equatable {
        /// The burst's first line, for `count` events (those counted at once).
        case first(count: Int)
        /// `count` more events since the last line, which was `since` ago.
        case more(count: Int, since: Duration)
    }

    /// The shortest time between two lines of one burst.
    package static let interval: Duration = .seconds(10)

    package private(set) var lastLine: ContinuousClock.Instant?
    package private(set) var untold = 0

    package init() {}

    /// Counts `added` more events at `now`; returns the line to log, or nil while the last line
    /// is more recent than `interval` (they are told later) or there is nothing to tell.
    package mutating func count(_ added: Int = 1, now: ContinuousClock.Instant) -> Line? {
        let quiet = untold == 0
        untold += added
        guard untold > 0 else { return nil }
        let line: Line
        if let last = lastLine {
            guard now - last >= Self.interval else { return nil }
            line = quiet ? .first(count: untold) : .more(count: untold, since: now - last)
        } else {
            line = .first(count: untold)
        }
        lastLine = now
        untold = 0
        return line
    }

    /// The line summing what was counted since the last, once `interval` has passed: the
    /// sweeper of whoever counts calls this, so the end of a burst is told though no event
    /// follows it.
    package mutating func flush(now: ContinuousClock.Instant) -> Line? {
        count(0, now: now)
    }
}
