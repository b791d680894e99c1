import Foundation
@testable import SkyNet
@testable import SkyNetDashboard
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// A real Prometheus scrapes a node's `--metrics` port and a coordinator's dashboard port
    /// (with a token: `/metrics` needs no session), and its query API returns the counts the
    /// scan made. Prometheus renames our `job` label `exported_job` (the target has its own).
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct PrometheusScrapeTests {
        @Test(.enabled(if: PrometheusServer.isInstalled, "needs /usr/bin/prometheus (apt-get install prometheus)"))
        func prometheusScrapesTheNodeAndTheCoordinatorAndCountsTheScansTasks() async throws {
            let scratch = try TokenScratch()
            let token = "prometheus-scrape-token-0123456789"
            let node = try MetricsProcessTests.startNode(scratch, token: token)
            defer { node.kill() }
            let nodeMetrics = try await MetricsProcessTests.metricsPort(node)
            let cluster = try scratch.clusterFile([(name: "n1", port: try await MetricsProcessTests.nodePort(node))])
            let scan = try RunningProcess(["scan", "--cluster", cluster, "--token-file", try scratch.tokenFile(token + "\n", named: "t2"),
                                           "--local-capacity", "0", "--total", "20", "--duration", "0.05", "--json",
                                           "--dashboard", "0", "--dashboard-linger", "60"])
            defer { scan.kill() }
            let announced = try await scan.waitForErrorLine { $0.hasPrefix("Dashboard: http://") }
            let dashboard = try #require(announced.wholeMatch(of: /Dashboard: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) })
            let summary = try await scan.waitForLine { $0.contains(#""event":"summary""#) }
            #expect(summary.contains(#""completed":20"#), "\(summary)")

            try await withPrometheus(targets: ["node": nodeMetrics, "coordinator": dashboard]) { prometheus in
                // Prometheus scrapes on its own clock (every second): nothing to await but its answer.
                let deadline = ContinuousClock.now + .seconds(20)
                var completed: [String: Double] = [:], up: [String: Double] = [:], timed: [String: Double] = [:]
                while ContinuousClock.now < deadline {
                    completed = try await Self.byJob(prometheus, #"skynet_tasks_total{exported_job="scan",outcome="completed"}"#)
                    up = try await Self.byJob(prometheus, "up")
                    timed = try await Self.byJob(prometheus, #"skynet_task_seconds_count{exported_job="scan"}"#)
                    if completed == ["node": 20, "coordinator": 20], up == ["node": 1, "coordinator": 1],
                       timed == ["node": 20, "coordinator": 20] { break }
                    try await Task.sleep(for: .milliseconds(250))
                }
                #expect(completed == ["node": 20, "coordinator": 20], "\(prometheus.log.suffix(5))")
                #expect(up == ["node": 1, "coordinator": 1])
                #expect(timed == ["node": 20, "coordinator": 20])
                // Nothing failed, and the failed series are there at 0 (made before the first task).
                let failed = try await Self.byJob(prometheus, #"skynet_tasks_total{exported_job="scan",outcome="failed"}"#)
                #expect(failed == ["node": 0, "coordinator": 0])
            }
            scan.send(SIGINT)  // ends the linger
            #expect(try await scan.finish(timeout: .seconds(20)).status == 0)
            node.send(SIGTERM)
            #expect(try await node.finish(timeout: .seconds(20)).status == 0)
        }

        /// The value of each series of `query`, by its target's `job` label.
        static func byJob(_ prometheus: PrometheusServer, _ query: String) async throws -> [String: Double] {
            var values: [String: Double] = [:]
            for series in try await prometheus.query(query) {
                if let job = series.labels["job"] { values[job] = series.value }
            }
            return values
        }
    }
}
