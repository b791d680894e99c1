import SkyNetHTTP
import SkyNetMetrics
import SkyNetNode
import SkyNetOptions
import SkyNetTransport

/// `skynet node --metrics [HOST:]PORT`: `/metrics` and `/healthz` on a port of their own
/// (`MetricsEndpoint`), started once the node accepts connections and stopped after it has
/// drained, so `/healthz` says 503 all through a drain.
extension NodeCommand {
    /// The node's metrics server, when `--metrics` asked for one.
    struct MetricsServer {
        let server: HTTPServer?

        func stop() async { await server?.stop() }
    }

    /// The parsed `--metrics` (nil: off).
    static func metricsAddress(_ args: Arguments) throws(UsageError) -> ListenAddress? {
        try args.string("metrics").map { (text) throws(UsageError) in try ListenAddress.parse(text, option: "metrics") }
    }

    /// Starts the metrics server when `--metrics` asks for one and logs
    /// `[Node] Metrics: http://HOST:PORT/metrics` (before `listening on`, so whoever waits for
    /// that has the port). Nil when it cannot start: said, and the node is stopped (exit 2).
    func startMetrics(for node: Node) async -> MetricsServer? {
        guard let address = metrics else { return MetricsServer(server: nil) }
        let server: HTTPServer
        do {
            server = try await MetricsEndpoint.start(host: address.host, port: address.port,
                                                     metrics: { node.metricFamilies() },
                                                     // While the node drains or stops, it takes no new task.
                                                     accepting: { !node.isStopping },
                                                     // Not `[Node] Metrics: `: that is the URL line's, which scripts match.
                                                     logPrefix: "[Node] Metrics server: ", log: Self.log)
        } catch {
            await Console.printError("error: --metrics \(Socket.authority(host: address.host, port: address.port)): \(error)".escapingControlCharacters)
            await node.stop(grace: .zero)
            return nil
        }
        await Console.printError("[Node] Metrics: http://\(Socket.authority(host: server.host, port: server.port))/metrics")
        return MetricsServer(server: server)
    }
}
