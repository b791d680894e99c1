/// How long a scan has left, from the rate of its recent completions (GNU parallel's `--eta`).
///
/// Fed the running count of finished tasks (completed plus given up) with the seconds since
/// the scan started, it estimates from a moving window (20 s by default) rather than the
/// average since the start, so the estimate follows peers that join or leave. When the window
/// holds fewer than `minimumFinished` completions (tasks that take minutes), it reaches back
/// to the last `minimumFinished` of them instead; with no completion for a while, the rate
/// decays and the estimate grows. A pure value: no clock, no lock; the caller owns both.
///
/// Memory is bounded: one sample per change of the count, merged while they come closer
/// together than a hundredth of the window, and at most `capacity` samples kept.
package struct ETAEstimator: Sendable {
    private struct Sample: Sendable {
        var seconds: Double
        var finished: Int
    }

    /// Seconds of recent history the rate is measured over.
    package let window: Double
    /// Completions needed before there is an estimate at all.
    package let minimumFinished: Int
    /// Seconds since the start before there is an estimate (a rate over 0.1 s is noise).
    package let minimumSeconds: Double
    /// The most samples kept.
    package static let capacity = 256
    /// Estimates longer than this (in seconds) are no estimate: `nil`, shown as `--:--`.
    package static let longest: Double = 1000 * 3600

    // Oldest first; the start of the scan (0 s, 0 finished) is the first sample.
    private var samples = [Sample(seconds: 0, finished: 0)]

    package init(window: Double = 20, minimumFinished: Int = 3, minimumSeconds: Double = 1) {
        self.window = window.isFinite ? max(0.1, window) : 20
        self.minimumFinished = max(1, minimumFinished)
        self.minimumSeconds = minimumSeconds.isFinite ? max(0, minimumSeconds) : 1
    }

    /// The tasks finished so far (completed plus given up), `seconds` after the start.
    /// A count that goes down or a time that goes back is ignored.
    package mutating func observe(finished: Int, at seconds: Double) {
        guard let last = samples.last, seconds.isFinite, seconds >= last.seconds, finished > last.finished else { return }
        let sample = Sample(seconds: seconds, finished: finished)
        // Merge with the newest sample while the two before it are closer than the resolution.
        if samples.count >= 2, seconds - samples[samples.count - 2].seconds < window / 100 {
            samples[samples.count - 1] = sample
        } else {
            if samples.count == Self.capacity { samples.removeFirst() }
            samples.append(sample)
        }
    }

    /// How many samples are kept (for tests of the bound).
    var sampleCount: Int { samples.count }

    /// The tasks finished at the latest observation.
    package var finished: Int { samples.last?.finished ?? 0 }

    /// Seconds left to finish `total` tasks at the recent rate, `now` seconds after the start:
    /// 0 when every task is finished, nil while there is too little data (or the rate is 0).
    /// Never negative.
    package func secondsLeft(total: Int, at now: Double) -> Double? {
        let finished = self.finished
        let remaining = max(0, total - finished)
        if remaining == 0 { return 0 }
        guard now.isFinite, now >= minimumSeconds, finished >= minimumFinished, let base = base(at: now) else { return nil }
        let span = now - base.seconds
        guard span > 0 else { return nil }
        let rate = Double(finished - base.finished) / span
        guard rate > 0 else { return nil }
        let left = Double(remaining) / rate
        return left.isFinite && left <= Self.longest ? max(0, left) : nil
    }

    /// Where the rate is measured from: the count as it stood when the window began, or
    /// further back when the window holds fewer than `minimumFinished` completions.
    private func base(at now: Double) -> Sample? {
        let windowStart = now - window
        let inWindow = samples.last { $0.seconds <= windowStart } ?? samples[0]
        if finished - inWindow.finished >= minimumFinished { return inWindow }
        return samples.last { $0.finished <= finished - minimumFinished }
    }
}

extension ETAEstimator {
    /// `ETA 0:42`, `ETA 1:02:03` past an hour, `ETA --:--` without an estimate. Rounded up,
    /// so it says 0:00 only when nothing is left.
    package static func label(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0, seconds <= longest else { return "ETA --:--" }
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let two = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "ETA \(hours):\(two(minutes)):\(two(rest))" : "ETA \(minutes):\(two(rest))"
    }
}
