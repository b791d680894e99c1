import SkyNetMetrics
import SkyNetRuntime

/// `/metrics` (Prometheus's text format) and `/healthz`: the routes a node serves on its
/// `--metrics` port and a coordinator on its dashboard port. Neither needs a session:
/// Prometheus and Kubernetes' probes have no cookie, and nothing secret is served (no input,
/// result, token or peer).
package enum MetricsEndpoint {
    /// - Parameters:
    ///   - metrics: the families of this process, made at each scrape (on the connection's
    ///     own thread); the process metrics are added to them.
    ///   - accepting: whether `/healthz` says 200 `ok` (it takes work), else 503 `draining`.
    package static func routes(metrics: @escaping @Sendable () -> [MetricFamily],
                              accepting: @escaping @Sendable () -> Bool) -> [String: HTTPRoute] {
        [
            "/metrics": .content(contentType: PrometheusText.contentType) {
                PrometheusText.render(metrics() + ProcessMetrics.families())
            },
            "/healthz": .respond { _ in
                let ok = accepting()
                return HTTPResponse(status: ok ? .ok : .serviceUnavailable, contentType: "text/plain; charset=utf-8",
                                    body: Array((ok ? "ok\n" : "draining\n").utf8))
            },
        ]
    }

    /// Serves only those two routes on `host:port` (0: a free port), as `skynet node --metrics`
    /// does; returns once it accepts connections. A connection's failure is logged after
    /// `logPrefix`.
    package static func start(host: String, port: Int, metrics: @escaping @Sendable () -> [MetricFamily],
                             accepting: @escaping @Sendable () -> Bool, logPrefix: String = "Metrics server: ",
                             log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.log = log
        configuration.logPrefix = logPrefix
        return try await HTTPServer.start(configuration, routes: routes(metrics: metrics, accepting: accepting))
    }
}
