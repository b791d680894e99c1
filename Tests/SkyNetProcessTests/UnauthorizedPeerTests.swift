import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// Peers without the token, against the real binary: a fake node that cannot prove
/// the token gets no input and is reported once; a coordinator that cannot prove it is refused.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct UnauthorizedPeerTests {
        @Test(arguments: ImpostorNode.Manner.allCases)
        func aFakeNodeIsReportedOnceAndGetsNoTaskWhileTheRealNodeAndLocalSystemDoTheScan(manner: ImpostorNode.Manner) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let tokenFile = try scratch.tokenFile(token)
            let fake = try await ImpostorNode.start(manner)
            defer { fake.stop() }
            let node = try await SkynetNode.start(name: "gamma", ["--token-file", tokenFile, "--failing-every", "0"])
            let cluster = try scratch.clusterFile([("beta", fake.port), ("gamma", node.port)])
            // Long enough (12 × 0.5 s over 2 + 4 slots) that both links have long answered.
            let scan = try await runSkynet(["scan", "--cluster", cluster, "--token-file", tokenFile, "--total", "12",
                                            "--duration", "0.5", "--local-capacity", "2", "--capacity", "4",
                                            "--failing-every", "0", "--quiet"],
                                           limit: .seconds(60), environment: ["SKYNET_TOKEN": nil])
            #expect(scan.status == 0, "\(scan.stdout)\n\(scan.stderr)")
            #expect(scan.lines.filter { $0.hasPrefix("[Cluster]") && $0.contains("beta") }
                        == ["[Cluster] Unauthorized: beta (it does not know the token)"], "\(scan.stdout)")
            #expect(scan.completions.map(\.input).sorted() == Array(0..<12))
            #expect(scan.completions.allSatisfy { $0.system == nil || $0.system == "gamma" })
            #expect(scan.completions.contains { $0.system == "gamma" }, "the real node took part: \(scan.stdout)")
            #expect(scan.reruns.isEmpty)
            fake.expectOnlyTheHandshake(manner, token: token)
            _ = try await node.stop()
        }

        /// No local slots and only the fake node: nothing can run the scan, and it says why.
        @Test(arguments: ImpostorNode.Manner.allCases)
        func aScanWhoseOnlyPeerIsAFakeEndsSayingNoPeerProvedTheToken(manner: ImpostorNode.Manner) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let tokenFile = try scratch.tokenFile(token)
            let fake = try await ImpostorNode.start(manner)
            defer { fake.stop() }
            let cluster = try scratch.clusterFile([("beta", fake.port)])
            let scan = try await runSkynet(["scan", "--cluster", cluster, "--token-file", tokenFile, "--total", "4",
                                            "--duration", "0", "--local-capacity", "0", "--quiet"],
                                           limit: .seconds(30), environment: ["SKYNET_TOKEN": nil])
            #expect(scan.status == 2, "\(scan.stdout)\n\(scan.stderr)")
            #expect(scan.lines.filter { $0 == "[Cluster] Unauthorized: beta (it does not know the token)" }.count == 1, "\(scan.stdout)")
            #expect(scan.stderr.contains("error: no peer proved it knows the token (the last: it does not know the token)"),
                    "\(scan.stderr)")
            #expect(scan.completions.isEmpty)
            fake.expectOnlyTheHandshake(manner, token: token)
        }

        /// A coordinator with another token, or none, is refused by a node with the token; each
        /// side says so. (No local slots: the scan then ends at once, exit 2.)
        @Test func aCoordinatorWithAnotherTokenOrNoneIsRefusedByTheNode() async throws {
            let scratch = try TokenScratch()
            let nodeToken = try scratch.tokenFile(TokenScratch.randomToken(), named: "node-token")
            let otherToken = try scratch.tokenFile(TokenScratch.randomToken(), named: "other-token")
            let node = try await SkynetNode.start(name: "beta", ["--token-file", nodeToken, "--failing-every", "0"])
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let attempts: [(token: [String], nodeSays: String, hint: String)] = [
                (["--token-file", otherToken], "unauthorized: wrong token (the proof does not match)",
                 "its token differs from this coordinator's (SKYNET_TOKEN or --token-file), or the handshake was altered on the way"),
                ([], "unauthorized: this node requires the token: use the hmac-sha256 handshake",
                 "set SKYNET_TOKEN to the nodes' token"),
            ]
            for (token, nodeSays, hint) in attempts {
                let scan = try await runSkynet(["scan", "--cluster", cluster, "--total", "2", "--duration", "0",
                                                "--local-capacity", "0", "--quiet"] + token,
                                               limit: .seconds(30), environment: ["SKYNET_TOKEN": nil])
                #expect(scan.status == 2, "\(token): \(scan.stdout)\n\(scan.stderr)")
                #expect(scan.lines.filter { $0 == "[Cluster] Refused by beta: unauthorized (\(hint))" }.count == 1, "\(token): \(scan.stdout)")
                #expect(scan.completions.isEmpty)
                try await node.process.waitForErrorLine(timeout: .seconds(10)) { line in
                    line.hasPrefix("[Node] Refused 127.0.0.1:") && line.hasSuffix(nodeSays)
                }
            }
            let log = try await node.stop()
            #expect(!log.stderr.contains("[Node] Connected:"), "\(log.stderr)")
        }

        /// `skynet status` with the token: a fake node is down, not authenticated; the real one up.
        @Test(arguments: ImpostorNode.Manner.allCases)
        func statusShowsAFakeNodeAsDownAndNotAuthenticated(manner: ImpostorNode.Manner) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let tokenFile = try scratch.tokenFile(token)
            let fake = try await ImpostorNode.start(manner)
            defer { fake.stop() }
            let node = try await SkynetNode.start(name: "gamma", ["--token-file", tokenFile])
            let cluster = try scratch.clusterFile([("beta", fake.port), ("gamma", node.port)])
            let json = try await runSkynet(["status", "--cluster", cluster, "--token-file", tokenFile, "--json"],
                                           limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
            #expect(json.status == 1, "\(json.stdout)\n\(json.stderr)")
            let rows = try json.lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(rows.count == 2)
            let beta = rows.first { $0["name"] as? String == "beta" }, gamma = rows.first { $0["name"] as? String == "gamma" }
            #expect(beta?["up"] as? Bool == false)
            #expect(beta?["reason"] as? String == "not authenticated (it does not know the token)")
            #expect(gamma?["up"] as? Bool == true)
            let table = try await runSkynet(["status", "--cluster", cluster, "--token-file", tokenFile],
                                            limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
            #expect(table.lines.contains { $0.hasPrefix("beta") && $0.contains("down (not authenticated (it does not know the token))") },
                    "\(table.stdout)")
            #expect(fake.received.allSatisfy { !$0.contains(#""type":"ping""#) }, "a fake node is never pinged")
            _ = try await node.stop()
        }
    }
}

/// A node written for these tests, on 127.0.0.1 and port 0, that does not know the token and
/// pretends otherwise as far as the protocol lets it. It records every line it receives and
/// answers pings, so that a coordinator that wrongly trusted it would show that it did.
final class ImpostorNode: Sendable {
    enum Manner: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Answers the hello with a plain protocol v1 welcome, as a node without a token does.
        case plainWelcome
        /// Sends a challenge, takes the proof, and answers with a plain (unsealed) welcome.
        case challengeThenPlainWelcome
        var testDescription: String { rawValue }
    }

    let port: Int
    private let manner: Manner
    private let listener: Listener
    private let state = Locked((connections: [Connection](), lines: [String]()))

    private init(manner: Manner, listener: Listener) {
        self.manner = manner
        self.listener = listener
        port = listener.port
    }

    static func start(_ manner: Manner) async throws -> ImpostorNode {
        let node = ImpostorNode(manner: manner, listener: try await Listener.bind(host: "127.0.0.1", port: 0))
        try node.listener.start { socket, peer in
            let connection = Connection(socket: socket, peer: peer)
            node.state.withLock { $0.connections.append(connection) }
            connection.start(onEvent: { event in
                guard case .line(let line) = event else { return }
                node.answer(line, on: connection)
            })
        }
        return node
    }

    /// Every line received, on any connection, in order of arrival.
    var received: [String] { state.withLock { $0.lines } }

    func stop() {
        listener.stop()
        for connection in state.withLock({ $0.connections }) { connection.close() }
    }

    private func answer(_ line: Data, on connection: Connection) {
        let text = String(decoding: line, as: UTF8.self)
        state.withLock { $0.lines.append(text) }
        let welcome = Reply.welcome(version: wireVersion, name: "beta", capacity: 4,
                                    jobs: [JobRegistry.scan: "built-in simulated scan"]).line
        switch try? Request.decode(line) {
        case .hello?:
            try? connection.send(manner == .plainWelcome ? welcome : Reply.challenge(nonce: Secrets.randomBytes(WireAuth.nonceCount)).line)
        case .auth?:
            try? connection.send(welcome)
        case .ping(let id)?:
            try? connection.send(Reply.pong(id: id, Pong(name: "beta", running: 0, capacity: 4, completed: 0, failed: 0)).line)
        default:
            break  // a scan or job is held forever, as an impostor collecting inputs would
        }
    }

    /// Checks that this node received the token handshake's hello (and, after a challenge, the
    /// proof) and nothing more: no scan, no job, no ping, and never the token.
    func expectOnlyTheHandshake(_ manner: Manner, token: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = received
        let types = lines.map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["type"] as? String ?? line
        }
        let handshake = manner == .plainWelcome ? ["hello"] : ["hello", "auth"]
        #expect(!types.isEmpty && types.count % handshake.count == 0, "\(lines)", sourceLocation: sourceLocation)
        #expect(types == Array(repeating: handshake, count: types.count / handshake.count).flatMap { $0 },
                "\(lines)", sourceLocation: sourceLocation)
        #expect(lines.allSatisfy { !$0.contains(#""token""#) && !TokenScratch.leaks(token, into: $0) },
                "\(lines)", sourceLocation: sourceLocation)
        #expect(lines.first.map { $0.contains(#""auth":"hmac-sha256""#) && $0.contains(#""nonce":""#) } == true,
                "\(lines)", sourceLocation: sourceLocation)
    }
}
