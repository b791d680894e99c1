import SkyNetCluster
import SkyNetHTTP
import SkyNetMetrics
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransport

/// A scan's dashboard: the page at `/`, the state at `/state` and its live frames at
/// `/events`, served by our `HTTPServer` from a `ScanBoard`; `/metrics` and `/healthz`
/// (`MetricsEndpoint`) beside them, which need no session.
///
/// One frame a tenth of a second (one a second once the scan has ended): each is the whole
/// state, published as the stream's snapshot, so a browser that falls behind skips to the
/// newest frame and never holds the scan back, whatever the scan's rate.
package final class Dashboard: Sendable {
    package let board: ScanBoard
    let server: HTTPServer
    private let ticker: Task<Void, Never>

    package static let frameInterval: Duration = .milliseconds(100)

    /// Starts serving on `host:port` (0: a free port) and returns once it accepts connections.
    /// `systems` is read every frame for each system's slots. `metrics` gives the scan's own
    /// families for `/metrics` (its tasks, its links' bytes); the board's slots and links and
    /// the failed logins are added here.
    package static func start(board: ScanBoard, systems: Systems, host: String, port: Int, token: String?,
                             metrics: @escaping @Sendable () -> [MetricFamily] = { [] },
                             log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Dashboard {
        var configuration = HTTPServer.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.log = log
        configuration.logPrefix = "dashboard: "
        // The port is known only once bound: the Host check is made for the real one.
        let access = Locked<DashboardAccess?>(nil)
        configuration.admit = { request in
            guard let ready = access.withLock({ $0 }) else { return .error(.serviceUnavailable, detail: "starting") }
            return ready.refusal(of: request)
        }
        let page = Array(DashboardPage.html.utf8)
        // `/state` made at most once a frame interval: a client asking in a loop gets the
        // same bytes and costs the machine running the scan next to nothing.
        // (The end of the scan is never served from before it.)
        let stateCache = Locked<(made: ContinuousClock.Instant, finished: Bool, body: [UInt8])?>(nil)
        let currentState: @Sendable () -> [UInt8] = {
            let finished = board.isFinished
            if let cached = stateCache.withLock({ $0 }), cached.finished == finished,
               ContinuousClock.now - cached.made < frameInterval { return cached.body }
            let body = board.currentState()
            stateCache.withLock { $0 = (.now, finished, body) }
            return body
        }
        let scrape: @Sendable () -> [MetricFamily] = {
            metrics() + ScanMetrics.families(board: board, loginFailures: access.withLock { $0 }?.loginFailures ?? 0)
        }
        let endpoint = MetricsEndpoint.routes(metrics: scrape, accepting: { true })  // 200 while it serves
        let server = try await HTTPServer.start(configuration, routes: endpoint.merging([
            "/": .fixed(contentType: "text/html; charset=utf-8", page),
            "/state": .content(contentType: "application/json", body: currentState),
            "/events": .eventStream,
            "/login/challenge": .respond { request in access.withLock { $0 }?.challenge(request) ?? .error(.serviceUnavailable) },
            "/login": .respond { request in access.withLock { $0 }?.login(request) ?? .error(.serviceUnavailable) },
        ]) { first, _ in first })
        access.withLock { $0 = DashboardAccess(token: token, host: server.host, port: server.port) }
        return Dashboard(board: board, server: server, systems: systems)
    }

    private init(board: ScanBoard, server: HTTPServer, systems: Systems) {
        self.board = board
        self.server = server
        ticker = Task { [board, server] in
            while !Task.isCancelled {
                board.update(await systems.slotUse)
                Self.publish(board, on: server)
                try? await DeadlineTimer.shared.sleep(for: board.isFinished ? .seconds(1) : Self.frameInterval)
            }
        }
    }

    /// The page's address, e.g. `http://127.0.0.1:8080/`.
    package var url: String {
        "http://\(Socket.authority(host: server.host, port: server.port))/"
    }

    package var host: String { server.host }
    package var port: Int { server.port }

    /// Sends a frame now (the final state, at once, when the scan has ended).
    package func publishNow() {
        Self.publish(board, on: server)
    }

    /// Stops the frames and the server: a page still open gets the frames already published
    /// (the final state, after `publishNow`) for up to a second, then every connection is closed.
    package func stop() async {
        ticker.cancel()
        await server.stop(grace: .seconds(1))
    }

    private static func publish(_ board: ScanBoard, on server: HTTPServer) {
        // A frame over the limit (a cluster of thousands of slots) is not sent; the page keeps
        // the previous one and `/state` still answers.
        try? server.publish(event: "state", data: String(decoding: board.frame(), as: UTF8.self), snapshot: true)
    }
}
