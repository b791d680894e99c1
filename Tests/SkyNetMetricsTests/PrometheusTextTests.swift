import Foundation
@testable import SkyNetMetrics
@testable import SkyNetRuntime
import Testing

/// The text format Prometheus reads (exposition format 0.0.4): escaping, one HELP and TYPE per
/// family, cumulative histogram buckets, the number format.
@Suite struct PrometheusTextTests {
    private func text(_ families: [MetricFamily]) -> String {
        String(decoding: PrometheusText.render(families), as: UTF8.self)
    }

    @Test func helpAndLabelValuesAreEscaped() {
        let family = MetricFamily(name: "x_total", help: "a\\b\"c\nd", kind: .counter,
                                  samples: [.init(labels: [("job", "a\\b\"c\nd")], value: 1)])
        #expect(text([family]) == """
            # HELP x_total a\\\\b"c\\nd
            # TYPE x_total counter
            x_total{job="a\\\\b\\"c\\nd"} 1

            """)
    }

    @Test func familiesGivenTwiceAndInterleavedGetOneHelpAndTypeWithContiguousSamples() {
        let a1 = MetricFamily(name: "a", help: "A", kind: .gauge, samples: [.init(labels: [("s", "1")], value: 1)])
        let b = MetricFamily(name: "b", help: "B", kind: .gauge, samples: [.init(value: 2)])
        let a2 = MetricFamily(name: "a", help: "A", kind: .gauge, samples: [.init(labels: [("s", "2")], value: 3)])
        let lines = text([a1, b, a2]).split(separator: "\n").map(String.init)
        #expect(lines == ["# HELP a A", "# TYPE a gauge", "a{s=\"1\"} 1", "a{s=\"2\"} 3", "# HELP b B", "# TYPE b gauge", "b 2"])
        #expect(lines.filter { $0.hasPrefix("# TYPE a ") }.count == 1)
    }

    @Test func histogramBucketsAreCumulativeAndInfEqualsCount() {
        var counts = HistogramCounts(bounds: [1, 0.1, 10])
        for value in [0.05, 0.1, 0.5, 5, 50, 50] { counts.observe(value) }
        let family = MetricFamily(name: "t_seconds", help: "T", kind: .histogram,
                                  histograms: [.init(labels: [("job", "scan")], counts: counts)])
        let lines = text([family]).split(separator: "\n").map(String.init)
        #expect(lines == [
            "# HELP t_seconds T", "# TYPE t_seconds histogram",
            "t_seconds_bucket{job=\"scan\",le=\"0.1\"} 2",
            "t_seconds_bucket{job=\"scan\",le=\"1\"} 3",
            "t_seconds_bucket{job=\"scan\",le=\"10\"} 4",
            "t_seconds_bucket{job=\"scan\",le=\"+Inf\"} 6",
            "t_seconds_sum{job=\"scan\"} 105.65",
            "t_seconds_count{job=\"scan\"} 6",
        ])
    }

    @Test func anObservationOnABoundCountsInThatBucketAndNaNIsNotCounted() {
        var counts = HistogramCounts(bounds: [1, 2])
        counts.observe(1)
        counts.observe(.nan)
        counts.observe(2.5)
        #expect(counts.counts == [1, 0])
        #expect(counts.cumulative == [1, 1, 2])
        #expect(counts.count == 2)
    }

    @Test func numbersAreIntegersWithoutAPointOrTheShortestRoundTrip() {
        #expect(PrometheusText.format(20) == "20")
        #expect(PrometheusText.format(-3) == "-3")
        #expect(PrometheusText.format(0) == "0")
        #expect(PrometheusText.format(0.1) == "0.1")
        #expect(PrometheusText.format(1.0 / 3) == "0.3333333333333333")
        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(-.infinity) == "-Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
        #expect(Double(PrometheusText.format(1e300)) == 1e300)
        #expect(PrometheusText.format(1_700_000_000.25) == "1700000000.25")
    }

    @Test func theContentTypeIsVersion004() {
        #expect(PrometheusText.contentType == "text/plain; version=0.0.4; charset=utf-8")
    }

    @Test func namesAreCheckedAgainstThePrometheusPattern() {
        #expect(PrometheusText.isValidName("skynet_tasks_total"))
        #expect(PrometheusText.isValidName(":a_1"))
        #expect(!PrometheusText.isValidName("1a"))
        #expect(!PrometheusText.isValidName("a-b"))
        #expect(!PrometheusText.isValidName(""))
    }
}
