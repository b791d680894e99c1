import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetHTTP
@testable import SkyNetMetrics
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A node's `/metrics` and `/healthz` (as `skynet node --metrics` serves them), read over a raw
/// socket after tasks went through a real `PeerConnection`.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeMetricsTests {
    static let token = "metrics-test-token-0123456789abcdef"

    func options() throws -> Node.Options {
        var options = NodeHarness().options(capacity: 2, token: Self.token)
        try options.jobs.register("echo") { request in "secret-result-\(request.input)" }
        try options.jobs.register("fail") { _ in throw ScanFailure(code: .taskFailed, message: "it failed on purpose") }
        return options
    }

    func job(_ peer: PeerConnection, _ name: String, input: String) async throws -> Reply {
        let id = peer.nextID()
        return try await peer.request(id: id, .run(id: id, task: ScanTask(input: id, duration: 0, job: name, text: input)))
    }

    func get(_ server: HTTPServer, _ path: String) async throws -> HTTPClientForTests.Response {
        try await HTTPClientForTests.get(server, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n")
    }

    /// The value of the sample line that starts with `series` (name and labels, exactly).
    func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func scrapeShowsTheTasksConnectionsAndBytesAndNothingSecret() async throws {
        let node = try await Node.start(try options())
        let server = try await MetricsEndpoint.start(host: "127.0.0.1", port: 0, metrics: { node.metricFamilies() },
                                                     accepting: { !node.isStopping })
        do {
            let peer = try await NodeHarness().connect(node, token: Self.token)
            defer { peer.close() }
            // A wrong token: one failed login.
            await #expect(throws: (any Error).self) { try await NodeHarness().connect(node, token: "wrong-token-0123456789abcdef") }
            guard case .result = try await job(peer, "echo", input: "secret-input-one") else { throw TestFailure("echo failed") }
            guard case .result = try await job(peer, "echo", input: "secret-input-two") else { throw TestFailure("echo failed") }
            guard case .failure(_, _, .taskFailed, _) = try await job(peer, "fail", input: "secret-input-three") else {
                throw TestFailure("fail did not fail")
            }
            guard case .failure(_, _, .unknownJob, _) = try await job(peer, "secret-job-name", input: "x") else {
                throw TestFailure("an unknown job ran")
            }
            let response = try await get(server, "/metrics")
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
            let text = response.text
            #expect(value(text, #"skynet_tasks_total{job="echo",outcome="completed"}"#) == 2)
            #expect(value(text, #"skynet_tasks_total{job="fail",outcome="failed"}"#) == 1)
            #expect(value(text, #"skynet_tasks_total{job="(unknown)",outcome="failed"}"#) == 1)
            #expect(value(text, #"skynet_tasks_total{job="scan",outcome="completed"}"#) == 0)
            #expect(value(text, #"skynet_task_seconds_count{job="echo"}"#) == 2)
            #expect(value(text, #"skynet_task_seconds_bucket{job="echo",le="+Inf"}"#) == 2)
            #expect(value(text, #"skynet_slots{state="running"}"#) == 0)
            #expect(value(text, #"skynet_slots{state="free"}"#) == 2)
            #expect(value(text, #"skynet_connections{state="authenticated"}"#) == 1)
            #expect(value(text, "skynet_login_failures_total") == 1)
            #expect((value(text, #"skynet_bytes_total{direction="sent"}"#) ?? 0) > 0)
            #expect((value(text, #"skynet_bytes_total{direction="received"}"#) ?? 0) > 0)
            #expect(value(text, "skynet_draining") == 0)
            #expect((value(text, "process_resident_memory_bytes") ?? 0) > 0)
            for secret in ["secret-input", "secret-result", "secret-job-name", Self.token, "wrong-token", "it failed on purpose", "127.0.0.1"] {
                #expect(!text.contains(secret), "the metrics show \(secret)")
            }
            let health = try await get(server, "/healthz")
            #expect(health.status == 200)
            #expect(health.text == "ok\n")
        } catch {
            await server.stop()
            await node.stop(grace: .seconds(1))
            throw error
        }
        await server.stop()
        await node.stop(grace: .seconds(1))
    }

    /// Bytes of a connection that ended stay counted, once: the counter never goes down, and
    /// it holds exactly what the client read and wrote (a double count of live and closed fails).
    @Test func bytesOfClosedConnectionsStayCountedOnce() async throws {
        try await NodeHarness().withNode(try options()) { node in
            func bytes(_ direction: String) -> Double {
                let text = String(decoding: PrometheusText.render(node.metricFamilies()), as: UTF8.self)
                return value(text, #"skynet_bytes_total{direction="\#(direction)"}"#) ?? -1
            }
            func sent() -> Double { bytes("sent") }
            let peer = try await NodeHarness().connect(node, token: Self.token)
            _ = try await job(peer, "echo", input: "a")
            let before = sent()
            #expect(before > 0)
            peer.close()
            _ = await peer.closed.value
            // The node forgets the session on its reader thread: wait for that, bounded.
            let deadline = ContinuousClock.now + .seconds(10)
            while node.connectionCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(node.connectionCount == 0)
            #expect(sent() >= before)
            // Closed, the client's own counts are final: the node sent what it read, and read
            // what it sent (the node sends nothing after the reply, nothing unsolicited).
            let client = peer.connection.progress
            #expect(sent() == Double(client.received))
            #expect(bytes("received") == Double(client.sent))
        }
    }

    @Test func healthzSaysDrainingOnceTheNodeStops() async throws {
        let node = try await Node.start(try options())
        let server = try await MetricsEndpoint.start(host: "127.0.0.1", port: 0, metrics: { node.metricFamilies() },
                                                     accepting: { !node.isStopping })
        await node.stop(grace: .zero)
        let health = try await get(server, "/healthz")
        let metrics = try await get(server, "/metrics")
        await server.stop()
        #expect(health.status == 503)
        #expect(health.text == "draining\n")
        #expect(value(metrics.text, "skynet_draining") == 1)
    }

    /// The node's `skynet_slots`, as a scrape shows them.
    func slots(_ node: Node) -> (running: Double?, free: Double?) {
        let text = String(decoding: PrometheusText.render(node.metricFamilies()), as: UTF8.self)
        return (value(text, #"skynet_slots{state="running"}"#), value(text, #"skynet_slots{state="free"}"#))
    }

    /// While the node drains it takes no task, so no slot is free (as a coordinator counts a
    /// draining peer), whatever its capacity; the running ones still show, and it says it drains.
    @Test func aDrainingNodeHasNoFreeSlot() async throws {
        let gate = try DrainGate.make(1)
        defer { gate.remove() }
        var options = try options()
        try DrainGate.register(in: &options.jobs)
        try await NodeHarness().withNode(options) { node in
            let peer = try await NodeHarness().connect(node, token: Self.token)
            defer { peer.close() }
            let id = peer.nextID()
            async let held = peer.request(id: id, .run(id: id, task: gate.task(0)), timeout: .seconds(60))
            try await awaitState(upTo: .seconds(10)) { node.system.counters.running == 1 }
            #expect(slots(node) == (1, 1))

            let drain = Task { await node.drain(within: .seconds(60)) }
            _ = try await withTimeout(.seconds(10)) { await peer.draining.value }
            #expect(slots(node) == (1, 0))
            #expect(node.metricFamilies().first { $0.name == "skynet_draining" }?.samples.first?.value == 1)
            try await gate.release(0)
            guard case .result = try await held else { throw TestFailure("the held task did not complete") }
            try await withTimeout(.seconds(10)) { await drain.value }
            #expect(slots(node) == (0, 0))
        }
    }

    /// A task refused for want of a slot is counted `busy` and stays out of the histogram.
    @Test func aBusyRefusalIsCountedAndNotTimed() async throws {
        let gate = AsyncSignal<Void>()
        var options = NodeHarness().options(capacity: 1)
        try options.jobs.register("hold") { _ in
            await gate.value
            return "held"
        }
        try await NodeHarness().withNode(options) { node in
            let peer = try await NodeHarness().connect(node)
            defer { peer.close() }
            let held = Task { try await job(peer, "hold", input: "a") }
            // The first task holds the one slot: wait for it, bounded.
            let deadline = ContinuousClock.now + .seconds(10)
            while node.system.counters.running == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            guard case .failure(_, _, .busy, _) = try await job(peer, "hold", input: "b") else { throw TestFailure("not busy") }
            gate.fulfil(())
            guard case .result = try await held.value else { throw TestFailure("the held task failed") }
            #expect(node.taskMetrics.count(job: "hold", outcome: .busy) == 1)
            #expect(node.taskMetrics.count(job: "hold", outcome: .completed) == 1)
            let histogram = node.taskMetrics.families()[1].histograms.first { $0.labels.first?.1 == "hold" }
            #expect(histogram?.counts.count == 1)
        }
    }
}
