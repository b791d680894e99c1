/// One metric family as Prometheus's text format shows it: a name, its help, its kind and its
/// samples (`PrometheusText` writes it). Names and label names come from our code only, never
/// from an input; label values may come from outside (a job name) and are escaped on output.
package struct MetricFamily: Sendable {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// One value of a counter or gauge, with its labels in the order they are written.
    package struct Sample: Sendable {
        package var labels: [(String, String)]
        package var value: Double

        package init(labels: [(String, String)] = [], value: Double) {
            self.labels = labels
            self.value = value
        }
    }

    /// One histogram of the family (its labels, without `le`).
    package struct HistogramSample: Sendable {
        package var labels: [(String, String)]
        package var counts: HistogramCounts

        package init(labels: [(String, String)] = [], counts: HistogramCounts) {
            self.labels = labels
            self.counts = counts
        }
    }

    package let name: String
    package let help: String
    package let kind: Kind
    package var samples: [Sample] = []
    package var histograms: [HistogramSample] = []

    package init(name: String, help: String, kind: Kind, samples: [Sample] = [], histograms: [HistogramSample] = []) {
        self.name = name
        self.help = help
        self.kind = kind
        self.samples = samples
        self.histograms = histograms
    }

    /// A family of one unlabelled value.
    package static func single(_ name: String, help: String, kind: Kind, value: Double) -> MetricFamily {
        MetricFamily(name: name, help: help, kind: kind, samples: [Sample(value: value)])
    }
}

/// Observations counted into fixed buckets: per-bucket counts (not cumulative), their sum and
/// how many there were. An observation above the last bound counts only in `count` (the
/// `+Inf` bucket); a NaN is not counted at all.
package struct HistogramCounts: Sendable, Equatable {
    /// Upper bounds, ascending, without `+Inf`.
    package let bounds: [Double]
    /// One count per bound: observations in (previous bound, this bound].
    package private(set) var counts: [UInt64]
    package private(set) var sum: Double = 0
    package private(set) var count: UInt64 = 0

    /// Bounds are sorted and de-duplicated; infinite and NaN ones are dropped (`+Inf` is implied).
    package init(bounds: [Double]) {
        self.bounds = Array(Set(bounds.filter(\.isFinite))).sorted()
        counts = Array(repeating: 0, count: self.bounds.count)
    }

    package mutating func observe(_ value: Double) {
        guard !value.isNaN else { return }
        if let index = bounds.firstIndex(where: { value <= $0 }) { counts[index] += 1 }
        sum += value
        count += 1
    }

    /// The cumulative count at each bound (what `_bucket{le=…}` shows), then `count` for `+Inf`.
    package var cumulative: [UInt64] {
        var total: UInt64 = 0
        return counts.map { total += $0; return total } + [count]
    }
}
