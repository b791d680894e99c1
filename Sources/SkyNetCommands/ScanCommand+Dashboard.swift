import SkyNetDashboard
import SkyNetMetrics
import SkyNetOptions
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransport

extension ScanCommand {
    /// Starts the dashboard when --dashboard asks for one, and says where it is; a warning
    /// when it is reachable from other machines. One that cannot start ends the scan (status 2).
    /// `metrics` are the scan's own families for its `/metrics`.
    func startDashboard(board: ScanBoard?, systems: Systems, output: ScanOutput,
                        metrics: @escaping @Sendable () -> [MetricFamily]) async throws(ScanExit) -> Dashboard? {
        guard let address = dashboard, let board else { return nil }
        let served: Dashboard
        do {
            served = try await Dashboard.start(board: board, systems: systems, host: address.host, port: address.port,
                                               token: token?.value, metrics: metrics, log: { message in
                // Offered, never awaited: a flood of broken connections cannot pile up waiting lines.
                _ = Console.writer.offer(message + "\n", to: 2)
            })
        } catch {
            await output.error("--dashboard \(address.host):\(address.port): \(error)")
            throw .failed(2)
        }
        // The address bound, not the one typed (`0x7f000001` and `localhost` are loopback too).
        if !Socket.isLoopback(served.host) {
            let login = token == nil
                ? "no token is set, so anyone who can reach it sees the scan (set SKYNET_TOKEN or --token-file for a login)"
                : "it asks for the cluster's token"
            await Console.printError(Progress.clearIfTerminal + "warning: the dashboard listens on \(served.host):\(served.port), beyond this machine: \(login)")
        }
        await Console.printError(Progress.clearIfTerminal + "Dashboard: \(served.url)")
        return served
    }

    /// After the scan: the final state stays served for --dashboard-linger seconds (a stop
    /// signal ends the wait), then the server stops.
    func closeDashboard(_ dashboard: Dashboard?, signals: TerminationSignals) async {
        guard let dashboard else { return }
        dashboard.publishNow()
        if dashboardLinger > 0, signals.received.current == nil {
            await Console.printError("Dashboard: the final state stays at \(dashboard.url) for \(dashboardLinger.formatted) s (Ctrl-C to quit)")
            let received = signals.received
            _ = try? await withTimeout(.seconds(dashboardLinger)) { await received.value }
        }
        await dashboard.stop()
    }
}
