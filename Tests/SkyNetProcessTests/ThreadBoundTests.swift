import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport

extension ProcessTests {
    /// Threads are bounded by design, not by load: a coordinator linked to a thousand nodes,
    /// a process hosting those thousand nodes (a session each), a node holding a thousand
    /// sessions and a node's metrics port under a slowloris flood each keep a handful of
    /// threads, where a thread per connection would be hundreds.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ThreadBoundTests {
        /// More than the loops, the cooperative pool, the timer, the writer and the blocking
        /// pool together (11 were seen); far below one per link.
        static let bound = 32

        @Test func aCoordinatorLinkedToAThousandNodesAndTheirHostKeepTheirThreadsFew() async throws {
            try await withScratchFolder { folder in
                let entries = folder.appendingPathComponent("nodes").path
                var options = ChildProcess.Options(arguments: ["node-host", "1000", entries])
                options.stdin = .pipe  // the host ends with this test's end of the pipe
                options.stdout = .lines(maxLength: 4096, keep: 16)
                options.stderr = .lines(keep: 100)
                let host = try ChildProcess.spawn(BenchProcessTests.bench, options)
                do {
                    _ = try await host.waitForLine(timeout: .seconds(60)) { $0 == "ready" }
                    let cluster = folder.appendingPathComponent("cluster.json").path
                    let nodes = try String(contentsOfFile: entries, encoding: .utf8).split(separator: "\n")
                    #expect(nodes.count == 1000)
                    try #"{"nodes":[\#(nodes.joined(separator: ","))]}"#.write(toFile: cluster, atomically: true, encoding: .utf8)
                    let scan = try RunningProcess(["scan", "--json", "--cluster", cluster, "--local-capacity", "0",
                                                   "--failing-every", "0", "--total", "3000", "--duration", "0.5"])
                    let most = Self.sampleThreads(of: [scan.pid, host.pid])
                    let finished = try await scan.finish(timeout: .seconds(120))
                    most.cancel()
                    let (coordinator, nodeHost) = await most.value
                    #expect(finished.status == 0, "stderr: \(finished.stderr.suffix(2000))")
                    #expect(finished.stdout.contains(#""completed":3000,"#))
                    let connected = Set(finished.lines.filter { $0.hasPrefix(#"{"event":"connected""#) }).count
                    #expect(connected == 1000)
                    #expect(coordinator > 0 && coordinator <= Self.bound, "the coordinator had \(coordinator) threads")
                    #expect(nodeHost > 0 && nodeHost <= Self.bound, "the host of 1,000 nodes had \(nodeHost) threads")
                } catch {
                    host.send(SIGKILL)
                    throw error
                }
                await host.stop(grace: .seconds(5))
            }
        }

        @Test func aNodeHoldingAThousandSessionsKeepsItsThreadsFew() async throws {
            let node = try RunningProcess(["node", "--port", "0", "--max-connections", "1100"])
            let listening = try await node.waitForLine { $0.hasPrefix("listening on ") }
            let port = try #require(Int(listening.split(separator: ":").last ?? ""))
            let most = Self.sampleThreads(of: [node.pid])
            let welcomed = try await onOwnThread(named: "test-sessions") { () throws -> Int in
                var clients: [Socket] = []
                defer { for client in clients { client.close() } }
                var welcomed = 0
                // Ten at a time: one address may have only 16 connections waiting for a hello.
                for batch in stride(from: 0, to: 1000, by: 10) {
                    for index in batch..<batch + 10 {
                        let client = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
                        clients.append(client)
                        let hello = Array(#"{"type":"hello","version":1,"name":"c\#(index)"}"#.utf8) + [10]
                        _ = try hello.withUnsafeBytes { try client.send($0, wait: true) }
                    }
                    for client in clients[batch..<batch + 10] where Self.readLine(client).contains(#""welcome""#) { welcomed += 1 }
                }
                return welcomed
            }
            most.cancel()
            let threads = await most.value.0
            node.kill()
            #expect(welcomed == 1000)
            #expect(threads > 0 && threads <= Self.bound, "the node had \(threads) threads for 1,000 sessions")
        }

        /// A node's metrics port under a slowloris flood from eight addresses: every slot held
        /// by a client that never ends its request head, hundreds more refused with 503 and left
        /// open. The node keeps its threads few (a thread per connection made over 256) and
        /// `/healthz` still answers.
        @Test func aNodesMetricsPortUnderASlowlorisFloodKeepsItsThreadsFew() async throws {
            let node = try RunningProcess(["node", "--port", "0", "--metrics", "0"])
            defer { node.kill() }
            let port = try await MetricsProcessTests.metricsPort(node)
            let most = Self.sampleThreads(of: [node.pid])
            let flood = Task {
                try await onOwnThread(named: "test-slowloris") { () throws -> [Socket] in
                    var sockets: [Socket] = []
                    do {
                        for index in 0..<600 {
                            let socket = try connectFrom("127.0.0.\(2 + index % 8)", toPort: port)
                            sockets.append(socket)
                            _ = try socket.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n".utf8), wait: true)
                        }
                    } catch {
                        for socket in sockets { socket.close() }
                        throw error
                    }
                    return sockets
                }
            }
            let sockets = try await flood.value
            defer { for socket in sockets { socket.close() } }
            // Asked after the whole flood: accepted after every one of its connections.
            let health = try await dashboardGet(port: port, "/healthz")
            most.cancel()
            let threads = await most.value.0
            #expect(health.status == 200)
            #expect(threads > 0 && threads <= Self.bound, "the node had \(threads) threads under 600 slowloris connections")
        }

        /// One line from `client` (blocking, up to 10 s).
        private static func readLine(_ client: Socket) -> String {
            client.setReceiveTimeout(.seconds(10))
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while line.count < 65536 {
                let count = (try? withUnsafeMutableBytes(of: &byte) { try client.receive(into: $0) }) ?? 0
                guard count == 1, byte != 10 else { break }
                line.append(byte)
            }
            return String(decoding: line, as: UTF8.self)
        }

        /// The most threads each of `pids` had, looked at every 10 ms until cancelled.
        private static func sampleThreads(of pids: [Int32]) -> Task<(Int, Int), Never> {
            Task {
                var most = [Int](repeating: 0, count: pids.count)
                while !Task.isCancelled {
                    for (index, pid) in pids.enumerated() { most[index] = max(most[index], threads(of: pid)) }
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return (most[0], most.count > 1 ? most[1] : 0)
            }
        }

        private static func threads(of pid: Int32) -> Int {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return 0 }
            return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
    }
}
