import Foundation
@testable import SkyNet
@testable import SkyNetCluster
import SkyNetLocalHosts
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// SIGTERM drains a real node: its running tasks finish (or, past
    /// `--drain-timeout`, run elsewhere at once), the scan counts nothing as failed, and the
    /// node exits 0.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct DrainProcessTests {
        /// A raw v1 client (no token) that says hello and asks for one task of `job` on `input`:
        /// the socket stays open while the task runs (the test closes it).
        static func rawClient(asking job: String, input: String, of host: String, _ port: Int) async throws -> Socket {
            let request = #"{"type":"hello","version":1,"name":"raw"}"# + "\n"
                + #"{"type":"job","id":1,"job":"\#(job)","task":{"id":"\#(UUID().uuidString)","sector":0,"input":"\#(input)"}}"# + "\n"
            return try await onOwnThread(named: "test-raw") { () throws -> Socket in
                let socket = try Socket.connect(host: host, port: port, timeout: .seconds(5))
                let bytes = Array(request.utf8)
                var offset = 0
                while offset < bytes.count { offset += try bytes[offset...].withUnsafeBytes { try socket.send($0, wait: true) } }
                return socket
            }
        }

        /// Nodes started with their own arguments (their stderr kept), a cluster file naming
        /// them, every process stopped on every path.
        func withNodes<T: Sendable>(_ arguments: [(String, [String])], _ body: (TestCluster) async throws -> T) async throws -> T {
            try await withCluster(nodes: arguments.map { (name: $0.0, arguments: $0.1) }, stderr: .lines(maxLength: 4096, keep: 64), body)
        }

        /// Waits until `node` runs `count` jobs named `program` (its children, seen in /proc).
        func awaitJobs(_ count: Int, named program: String, on node: NodeProcess) async throws {
            let pid = node.processIdentifier
            try await withTimeout(.seconds(20)) {
                while HostProcesses.descendants(of: pid).filter({ $0.name == program }).count < count {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }

        func events(_ run: Finished) -> [[String: Any]] {
            run.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }

        @Test func aSIGTERMedNodeFinishesItsRunningTasksAndExitsZero() async throws {
            // `sleep 1 N` (the sector is appended): 1 to 4 s.
            let node = ["--job", "nap=sleep 1", "--capacity", "2"]
            try await withNodes([("beta", node), ("gamma", node)]) { cluster in
                let scan = try cluster.startScan(["--job", "nap", "--total", "4", "--local-capacity", "0", "--json"])
                defer { scan.kill() }
                let beta = try #require(cluster.node("beta"))
                try await awaitJobs(2, named: "sleep", on: beta)
                beta.send(SIGTERM)
                let status = try await withTimeout(.seconds(20)) { await beta.exitStatus.value }
                #expect(status == 0)
                let drainLog = beta.child.stderrLines?.lines ?? []
                #expect(drainLog.contains { $0.hasPrefix("[Node] Draining (signal 15): up to 30 s for 2 running tasks") }, "\(drainLog)")

                let run = try await scan.finish(timeout: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                let all = events(run)
                let draining = all.filter { $0["event"] as? String == "draining" }
                #expect(draining.count == 1 && draining.first?["system"] as? String == "beta", "\(run.stdout)")
                // beta's two tasks finished on beta, during its drain.
                let completed = all.filter { $0["event"] as? String == "completed" }
                #expect(completed.filter { $0["system"] as? String == "beta" }.count == 2, "\(run.stdout)")
                #expect(completed.allSatisfy { $0["attempt"] as? Int == 1 })
                let summary = all.last { $0["event"] as? String == "summary" }
                #expect(summary?["completed"] as? Int == 4)
                #expect(summary?["failed"] as? Int == 0)
                #expect(summary?["reruns"] as? Int == 0)
            }
        }

        @Test func pastTheDrainTimeoutItsTasksRunElsewhereAtOnceAtTheFirstAttempt() async throws {
            // beta's tasks would sleep 30 s; gamma's are quick (another command: the scan allows it).
            try await withNodes([
                ("beta", ["--job", "nap=sleep 30", "--capacity", "2", "--drain-timeout", "1"]),
                ("gamma", ["--job", "nap=sleep 0.1", "--capacity", "2"]),
            ]) { cluster in
                let scan = try cluster.startScan(["--job", "nap", "--total", "4", "--local-capacity", "0", "--json",
                                                  "--allow-job-mismatch"])
                defer { scan.kill() }
                let beta = try #require(cluster.node("beta"))
                try await awaitJobs(2, named: "sleep", on: beta)
                let started = ContinuousClock.now
                beta.send(SIGTERM)
                let status = try await withTimeout(.seconds(20)) { await beta.exitStatus.value }
                #expect(status == 0)
                #expect(ContinuousClock.now - started < .seconds(6))

                let run = try await scan.finish(timeout: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                let all = events(run)
                let completed = all.filter { $0["event"] as? String == "completed" }
                #expect(completed.count == 4)
                #expect(completed.allSatisfy { $0["system"] as? String == "gamma" && $0["attempt"] as? Int == 1 }, "\(run.stdout)")
                #expect(!all.contains { $0["event"] as? String == "retry" }, "\(run.stdout)")
                let summary = all.last { $0["event"] as? String == "summary" }
                #expect(summary?["completed"] as? Int == 4)
                #expect(summary?["failed"] as? Int == 0)
                #expect(summary?["reruns"] as? Int == 0)
            }
        }

        /// `--metrics` through a drain: once SIGTERM'd, while its task still runs, `/healthz`
        /// says 503 and `/metrics` says it drains (no slot free); when the task ends, the node
        /// exits 0. A metrics server stopped before the drain, or a health check that waits for
        /// the end, fails here.
        @Test func whileItDrainsHealthzSays503AndMetricsSayDrainingThenItExitsZero() async throws {
            // A FIFO holds the task (`cat` blocks in its open) until the test writes it.
            let gate = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-drain-fifo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: gate, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: gate) }
            let fifo = gate.appendingPathComponent("held").path
            try #require(mkfifo(fifo, 0o600) == 0)
            try await withNodes([("beta", ["--job", "hold=cat {}", "--metrics", "127.0.0.1:0", "--drain-timeout", "120"])]) { cluster in
                let beta = try #require(cluster.node("beta"))
                let log = try #require(beta.child.stderrLines)
                let announced = try #require(try await withTimeout(.seconds(20)) { await log.first { $0.hasPrefix("[Node] Metrics: ") } })
                let metricsPort = try #require(announced.wholeMatch(of: /\[Node\] Metrics: http:\/\/127\.0\.0\.1:(\d+)\/metrics/).flatMap { Int($0.1) })
                #expect(try await dashboardGet(port: metricsPort, "/healthz").status == 200)

                // An old client's task holds the node.
                let socket = try await Self.rawClient(asking: "hold", input: fifo, of: beta.host, beta.port)
                defer { socket.close() }
                try await awaitJobs(1, named: "cat", on: beta)
                beta.send(SIGTERM)
                _ = try #require(try await withTimeout(.seconds(10)) { await log.first { $0.hasPrefix("[Node] Draining (signal 15)") } })

                let health = try await dashboardGet(port: metricsPort, "/healthz")
                #expect(health.status == 503)
                #expect(String(decoding: health.body, as: UTF8.self) == "draining\n")
                let metrics = String(decoding: try await dashboardGet(port: metricsPort, "/metrics").body, as: UTF8.self)
                let samples = Set(metrics.split(separator: "\n").map(String.init))
                for sample in ["skynet_draining 1", #"skynet_slots{state="running"} 1"#, #"skynet_slots{state="free"} 0"#] {
                    #expect(samples.contains(sample), "no \(sample) in \(metrics)")
                }
                // All of that while the task still ran.
                #expect(HostProcesses.descendants(of: beta.processIdentifier).contains { $0.name == "cat" })
                #expect(beta.exitStatus.current == nil)

                // Released, the task completes, the drain ends and the node exits 0.
                try await onOwnThread(named: "test-gate") { () throws in
                    let descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
                    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    defer { close(descriptor) }
                    _ = write(descriptor, "released", 8)
                }
                #expect(try await withTimeout(.seconds(20)) { await beta.exitStatus.value } == 0)
                let reply = try await onOwnThread(named: "test-raw-read") { () -> String in
                    socket.setReceiveTimeout(.seconds(10))
                    var bytes: [UInt8] = []
                    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
                    defer { chunk.deallocate() }
                    while bytes.count < 1 << 20, let count = try? socket.receive(into: chunk), count > 0 { bytes += chunk[..<count] }
                    return String(decoding: bytes, as: UTF8.self)
                }
                #expect(reply.contains("released"), "\(reply)")
                #expect(!log.lines.contains { $0.contains("cancel") }, "\(log.lines)")
            }
        }

        @Test func statusShowsANodeThatDrainsAsUpDraining() async throws {
            try await withNodes([("beta", ["--job", "nap=sleep 30", "--drain-timeout", "3"])]) { cluster in
                let beta = try #require(cluster.node("beta"))
                // An old client's task keeps the drain going (it is cancelled after 3 s).
                let socket = try await Self.rawClient(asking: "nap", input: "0", of: beta.host, beta.port)
                defer { socket.close() }
                try await awaitJobs(1, named: "sleep", on: beta)
                beta.send(SIGTERM)
                let log = try #require(beta.child.stderrLines)
                _ = try await withTimeout(.seconds(10)) { await log.first { $0.hasPrefix("[Node] Draining (signal 15)") } }

                let json = try await runSkynet(["status", "--cluster", cluster.clusterFile, "--json"], limit: .seconds(20))
                let row = try #require((try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) as? [String: Any], "\(json.stdout)")
                #expect(row["up"] as? Bool == true)
                #expect(row["draining"] as? Bool == true, "\(json.stdout)")
                let table = try await runSkynet(["status", "--cluster", cluster.clusterFile], limit: .seconds(20))
                #expect(table.stdout.contains("up (draining)"), "\(table.stdout)")
                #expect(try await withTimeout(.seconds(20)) { await beta.exitStatus.value } == 0)
            }
        }
    }
}
