import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport

/// A node process against silent, idle, flooding and descriptor-hungry clients.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct NodeLimitsTests {
        let hello = #"{"type":"hello","version":1,"name":"raw"}"#

        /// Silent clients that said hello fill `--max-connections`; a fifth is told
        /// busy; once the idle bound has passed they are gone and a scan is served.
        @Test func aNodeFullOfSilentClientsServesANewCoordinatorOnceTheIdleBoundHasPassed() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--max-connections", "4", "--idle-timeout", "2", "--failing-every", "0"]) { cluster in
                let node = try #require(cluster.node("beta"))
                var silent: [RawLineClient] = []
                for _ in 0..<4 {
                    let client = try await RawLineClient(port: node.port, first: hello)
                    #expect(try await client.receive()?["type"] as? String == "welcome")
                    silent.append(client)
                }
                let fifth = try await RawLineClient(port: node.port, first: hello)
                #expect(try await fifth.receive()?["code"] as? String == "busy")
                // Each silent client is closed by the node within the bound (and its sweep).
                for client in silent { #expect(try await client.receive() == nil) }
                let scan = try await cluster.scan(["--total", "4", "--duration", "0", "--local-capacity", "0"], limit: .seconds(30))
                #expect(scan.status == 0, "\(scan.stderr)")
                #expect(scan.completions.filter { $0.system == "beta" }.count == 4)
            }
        }

        /// Hundreds of connections that never say hello do not keep out a client with
        /// the token: it is welcomed at once and `status` says up.
        @Test func silentConnectionsNeverLockOutAClientWithTheToken() async throws {
            let token = "open-sesame-open-sesame"
            try await withTokenNode(token: token) { node, cluster in
                var silent: [RawLineClient] = []
                for _ in 0..<300 { silent.append(try await RawLineClient(port: node.port)) }
                let clock = ContinuousClock(), start = clock.now
                let welcome = try await onOwnThread(named: "test-token-client") {
                    let client = try EncryptedClient(port: node.port, token: token)
                    defer { client.close() }
                    return client.welcome
                }
                #expect(jsonFields(welcome)?["type"] as? String == "welcome", "\(welcome)")
                #expect(clock.now - start < .seconds(2))
                let status = try await runSkynet(["status", "--cluster", cluster.clusterFile], limit: .seconds(20),
                                                 environment: ["SKYNET_TOKEN": token])
                #expect(status.status == 0, "\(status.stdout)\n\(status.stderr)")
                #expect(status.stdout.contains(" up "))
                silent.removeAll()
            }
        }

        /// A client streaming a million pings and reading every reply: the node stays
        /// small (back pressure, no task per ping) and serves a fresh client at once afterwards.
        @Test func aPingFloodKeepsTheNodeSmallAndAFreshClientIsServedAfterwards() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let node = try #require(cluster.node("beta"))
                let pid = node.processIdentifier
                let startKiB = try #require(residentKiB(of: pid))
                let client = try await RawLineClient(port: node.port, first: hello)
                #expect(try await client.receive()?["type"] as? String == "welcome")
                let total = 1_000_000, socket = client.socket
                let peak = Locked(startKiB), done = Flag()
                let sampler = Task {
                    while !done.isSet {
                        if let now = residentKiB(of: pid) { peak.withLock { $0 = max($0, now) } }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
                async let written: Void = onOwnThread(named: "test-ping-writer") {
                    var batch: [UInt8] = []
                    for id in 0..<total {
                        batch += Array(#"{"type":"ping","id":\#(id)}"#.utf8) + [10]
                        if batch.count > 32 * 1024 { try socket.sendAll(batch); batch.removeAll(keepingCapacity: true) }
                    }
                    try socket.sendAll(batch)
                }
                let pongs = try await onOwnThread(named: "test-ping-reader") {
                    receiveLines(from: socket, count: total, silence: .seconds(20)).filter { $0.contains(#""type":"pong""#) }.count
                }
                try await written
                done.set()
                await sampler.value
                let peakKiB = peak.withLock { $0 }
                print("ping flood: \(pongs) pongs; node RSS \(startKiB) KiB at start, peak \(peakKiB) KiB")
                #expect(pongs == total)
                // 100 MiB; a ThreadSanitizer build starts larger, so allow its start + 64 MiB.
                #expect(peakKiB < max(100 * 1024, startKiB + 64 * 1024))
                let fresh = try await RawLineClient(port: node.port)
                let clock = ContinuousClock(), start = clock.now
                #expect(try await fresh.exchange(hello)?["type"] as? String == "welcome")
                #expect(try await fresh.exchange(#"{"type":"ping","id":1}"#)?["type"] as? String == "pong")
                #expect(clock.now - start < .seconds(2))
            }
        }

        private func withTokenNode(token: String, _ body: (NodeProcess, TestCluster) async throws -> Void) async throws {
            try await withCluster(nodes: 0) { empty in
                let node = try await NodeProcess.start(
                    executable: skynetBinary, name: "guarded", arguments: ["--failing-every", "0"],
                    environment: ProcessInfo.processInfo.environment.merging(["SKYNET_TOKEN": token]) { $1 })
                do {
                    let cluster = TestCluster(nodes: [node], folder: empty.folder)
                    try cluster.writeClusterFile()
                    try await body(node, cluster)
                } catch {
                    await node.stop()
                    throw error
                }
                await node.stop()
            }
        }
    }
}

/// A one-way signal between tasks.
final class Flag: Sendable {
    private let state = Locked(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}
