import Foundation
@testable import SkyNet
@testable import SkyNetDashboard
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// Where `promtool` is, if installed (Debian's `prometheus` package; `.ci/run` installs it).
let promtoolPath: String? = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

extension ProcessTests {
    /// `skynet node --metrics` and a coordinator's dashboard port as a user runs them: the log
    /// line, `/healthz`, `/metrics` without a session, and `promtool check metrics` on both.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct MetricsProcessTests {
        /// A node with `--metrics 0` and a token; its metrics port from the log line.
        static func startNode(_ scratch: TokenScratch, token: String) throws -> RunningProcess {
            try RunningProcess(["node", "--port", "0", "--metrics", "0", "--failing-every", "0",
                                "--token-file", try scratch.tokenFile(token + "\n")])
        }

        static func metricsPort(_ node: RunningProcess) async throws -> Int {
            let line = try await node.waitForErrorLine { $0.hasPrefix("[Node] Metrics: ") }
            let match = try #require(line.wholeMatch(of: /\[Node\] Metrics: http:\/\/127\.0\.0\.1:(\d+)\/metrics/), "\(line)")
            return try #require(Int(match.1))
        }

        static func nodePort(_ node: RunningProcess) async throws -> Int {
            let line = try await node.waitForLine { $0.hasPrefix("listening on ") }
            return try #require(Int(line.split(separator: ":").last ?? ""), "\(line)")
        }

        /// `promtool check metrics < FILE`: its status and everything it printed.
        static func promtoolCheck(_ text: [UInt8], scratch: TokenScratch, named name: String) async throws -> Finished {
            let path = scratch.path(name)
            try Data(text).write(to: URL(fileURLWithPath: path))
            return try await runProgram("/bin/sh", ["-c", "promtool check metrics < \"$1\"", "sh", path], limit: .seconds(30))
        }

        @Test func theNodeLogsItsMetricsAddressAndHealthzSaysOk() async throws {
            let scratch = try TokenScratch()
            let node = try Self.startNode(scratch, token: "metrics-process-token-0123456789")
            defer { node.kill() }
            let port = try await Self.metricsPort(node)
            _ = try await Self.nodePort(node)  // the line comes before `listening on`
            let health = try await dashboardGet(port: port, "/healthz")
            #expect(health.status == 200)
            #expect(String(decoding: health.body, as: UTF8.self) == "ok\n")
            let metrics = try await dashboardGet(port: port, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
            let text = String(decoding: metrics.body, as: UTF8.self)
            for family in ["skynet_tasks_total", "skynet_task_seconds", "skynet_slots", "skynet_connections", "skynet_login_failures_total",
                           "skynet_bytes_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds",
                           "process_cpu_seconds_total", "process_start_time_seconds"] {
                #expect(text.contains("# TYPE \(family) "), "no \(family)")
            }
            node.send(SIGTERM)
            let run = try await node.finish(timeout: .seconds(20))
            #expect(run.status == 0, "\(run.stderr)")
        }

        /// The node's and the coordinator's output, after a scan with a token (so the
        /// coordinator's `/metrics` must answer without a session), pass `promtool check metrics`
        /// with nothing to say.
        @Test(.enabled(if: promtoolPath != nil, "needs promtool (apt-get install prometheus)"))
        func promtoolAcceptsTheNodesAndTheCoordinatorsMetrics() async throws {
            let scratch = try TokenScratch()
            let token = "metrics-process-token-0123456789"
            let node = try Self.startNode(scratch, token: token)
            defer { node.kill() }
            let metricsPort = try await Self.metricsPort(node)
            let cluster = try scratch.clusterFile([(name: "n1", port: try await Self.nodePort(node))])
            let scan = try RunningProcess(["scan", "--cluster", cluster, "--token-file", try scratch.tokenFile(token + "\n", named: "t2"),
                                           "--local-capacity", "0", "--total", "20", "--duration", "0.01", "--json",
                                           "--dashboard", "0", "--dashboard-linger", "30"])
            defer { scan.kill() }
            let announced = try await scan.waitForErrorLine { $0.hasPrefix("Dashboard: http://") }
            let dashboard = try #require(announced.wholeMatch(of: /Dashboard: http:\/\/127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) })
            try await scan.waitForLine { $0.contains(#""event":"summary""#) }

            let coordinator = try await dashboardGet(port: dashboard, "/metrics")
            #expect(coordinator.status == 200, "the coordinator's /metrics needs no session")
            let coordinatorText = String(decoding: coordinator.body, as: UTF8.self)
            #expect(coordinatorText.contains(#"skynet_tasks_total{job="scan",outcome="completed"} 20"#), "\(coordinatorText)")
            #expect(try await dashboardGet(port: dashboard, "/healthz").status == 200)
            let nodeMetrics = try await dashboardGet(port: metricsPort, "/metrics")
            #expect(String(decoding: nodeMetrics.body, as: UTF8.self).contains(#"skynet_tasks_total{job="scan",outcome="completed"} 20"#))
            // The token never shows.
            #expect(!coordinatorText.contains(token))
            #expect(!String(decoding: nodeMetrics.body, as: UTF8.self).contains(token))

            for (name, body) in [("node.prom", nodeMetrics.body), ("coordinator.prom", coordinator.body)] {
                let check = try await Self.promtoolCheck(body, scratch: scratch, named: name)
                #expect(check.status == 0, "\(name): \(check.stdout)\(check.stderr)")
                #expect(check.stdout.isEmpty && check.stderr.isEmpty, "\(name): \(check.stdout)\(check.stderr)")
            }
            scan.send(SIGINT)  // ends the linger
            #expect(try await scan.finish(timeout: .seconds(20)).status == 0)
            node.send(SIGTERM)
            #expect(try await node.finish(timeout: .seconds(20)).status == 0)
        }

        /// A node of a program with actors shows them on `/metrics`: the actors it hosts by
        /// type, the calls it ran by type, method and outcome, and their seconds; promtool
        /// accepts it.
        @Test(.enabled(if: promtoolPath != nil, "needs promtool (apt-get install prometheus)"))
        func aNodeOfAnActorProgramShowsItsActorsAndCalls() async throws {
            let scratch = try TokenScratch()
            let example = ActorExampleTests.example
            let node = try RunningProcess(["node", "--port", "0", "--metrics", "0", "--name", "n1"], program: example)
            defer { node.kill() }
            let metricsPort = try await Self.metricsPort(node)
            let cluster = try scratch.clusterFile([(name: "n1", port: try await Self.nodePort(node))])
            let program = try RunningProcess(["--cluster", cluster], program: example)
            defer { program.kill() }
            // While the program runs, the actor it spawned lives on n1: /metrics and `skynet status` show it.
            try await program.waitForLine(timeout: .seconds(60)) { $0.hasSuffix(" by n1") }
            let during = String(decoding: try await dashboardGet(port: metricsPort, "/metrics").body, as: UTF8.self)
            #expect(during.contains(#"skynet_actors{type="ScanSystem"} 1"#), "\(during)")
            let status = try await runSkynet(["status", "--cluster", cluster, "--json"])
            #expect(status.stdout.contains(#""actors":{"ScanSystem":1}"#), "\(status.stdout)")
            let table = try await runSkynet(["status", "--cluster", cluster]).lines
            #expect(table.first?.hasSuffix("actors") == true && table.last?.hasSuffix("ScanSystem 1") == true, "\(table)")
            let run = try await program.finish(timeout: .seconds(120))
            #expect(run.status == 0, "\(run.stderr)")
            let by = program.lines.filter { $0.hasSuffix(" by n1") }.count
            let metrics = try await dashboardGet(port: metricsPort, "/metrics")
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(text.contains(#"skynet_actor_calls_total{type="ScanSystem",method="scan",outcome="returned"} \#(by)"#), "\(text)")
            #expect(text.contains(#"skynet_actor_call_seconds_count{type="ScanSystem",method="scan"} \#(by)"#), "\(text)")
            let check = try await Self.promtoolCheck(metrics.body, scratch: scratch, named: "actors.prom")
            #expect(check.status == 0 && check.stdout.isEmpty && check.stderr.isEmpty, "\(check.stdout)\(check.stderr)")
            node.send(SIGTERM)
            #expect(try await node.finish(timeout: .seconds(20)).status == 0)
        }

        /// A metrics connection that fails is logged as the metrics server's (`[Node] Metrics
        /// server: …`), never under `[Node] Metrics: `, the prefix of the URL line that scripts
        /// match, and never as a dashboard's.
        @Test func aFailedMetricsConnectionIsLoggedAsTheMetricsServersNotAsTheURLLine() async throws {
            let scratch = try TokenScratch()
            let node = try Self.startNode(scratch, token: "metrics-process-token-0123456789")
            defer { node.kill() }
            let port = try await Self.metricsPort(node)
            _ = try await Self.nodePort(node)
            // A client that resets its connection (SO_LINGER 0): the server's read fails.
            try await onOwnThread(named: "test-reset") { () throws in
                let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
                var abort = linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(socket.descriptor, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
                socket.close()
            }
            let line = try await node.waitForErrorLine(timeout: .seconds(20)) { $0.lowercased().contains("reset") }
            #expect(line.hasPrefix("[Node] Metrics server: "), "\(line)")
            #expect(!line.contains("dashboard"), "\(line)")
            #expect(node.errorLines.filter { $0.hasPrefix("[Node] Metrics: ") }.count == 1, "\(node.errorLines)")
            node.send(SIGTERM)
            #expect(try await node.finish(timeout: .seconds(20)).status == 0)
        }

        @Test func metricsWithStdioIsAUsageError() async throws {
            let run = try await runSkynet(["node", "--stdio", "--metrics", "0"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("option '--metrics' cannot go with --stdio"), "\(run.stderr)")
        }

        @Test(arguments: ["abc", "70000", "127.0.0.1:", "host:port"])
        func aBadMetricsAddressIsAUsageError(_ value: String) async throws {
            let run = try await runSkynet(["node", "--port", "0", "--metrics", value])
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: option '--metrics' wants [HOST:]PORT"), "\(run.stderr)")
        }

        /// A metrics port in use: exit 2 naming --metrics, and no node left listening.
        @Test func aMetricsPortInUseIsAnError() async throws {
            let taken = try Socket.listen(host: "127.0.0.1", port: 0)
            defer { taken.close() }
            let port = try taken.localAddress().port
            let run = try await runSkynet(["node", "--port", "0", "--metrics", String(port)], limit: .seconds(30))
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: --metrics 127.0.0.1:\(port):"), "\(run.stderr)")
            #expect(!run.stdout.contains("listening on"))
        }
    }
}
