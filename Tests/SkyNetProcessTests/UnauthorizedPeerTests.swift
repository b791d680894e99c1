import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// Peers without the token, against the real binary: a fake node whose answer to the Noise
/// handshake does not open (or that answers in plain) gets nothing after the hello and is
/// reported once; a coordinator with another token, or none, is refused.
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
            try await fake.expectOnlyTheHello(token: token)
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
            try await fake.expectOnlyTheHello(token: token)
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
                (["--token-file", otherToken], "unauthorized: wrong token (the handshake does not open)",
                 "its token differs from this coordinator's (SKYNET_TOKEN or --token-file), or the handshake was altered on the way"),
                ([], "unauthorized: this node requires the token: send a version 2 hello with a Noise handshake",
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
            try await fake.expectOnlyTheHello(token: token)  // never pinged
            _ = try await node.stop()
        }
    }
}

/// A node written for these tests, on 127.0.0.1 and port 0, that does not know the token and
/// pretends otherwise as far as the protocol lets it: it answers the hello as its `Manner`
/// says, then records every byte the client sends until it closes. A coordinator that wrongly
/// trusted it would send it something more (a request, a ping, a frame), and show that it did.
final class ImpostorNode: Sendable {
    enum Manner: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// A welcome in plain, no handshake: what a node without a token sends.
        case plainWelcome
        /// A `handshake` line whose Noise message is made-up bytes, as long as a real one.
        case madeUpHandshake
        /// The coordinator's own first message sent back as the answer (a reflection).
        case reflectedHandshake
        /// An answer made with another token: a fresh key, and the welcome sealed with keys
        /// from that token (the first message did not open with it, so nothing better can be made).
        case anotherTokensHandshake
        var testDescription: String { rawValue }
    }

    /// One client's connection, once it ended: its first line, and every byte after it.
    struct Conversation: Sendable {
        let hello: String
        let after: [UInt8]
        /// Whether the client closed (rather than going silent for 10 s).
        let closedByClient: Bool
    }

    let port: Int
    private let manner: Manner
    private let listener: Listener
    private let conversations = Watched<[Conversation]>([])

    private init(manner: Manner, listener: Listener) {
        self.manner = manner
        self.listener = listener
        port = listener.port
    }

    static func start(_ manner: Manner) async throws -> ImpostorNode {
        let node = ImpostorNode(manner: manner, listener: try await Listener.bind(host: "127.0.0.1", port: 0))
        try node.listener.start { socket, _ in
            startThread(named: "test-impostor") { node.converse(socket) }
        }
        return node
    }

    func stop() { listener.stop() }

    /// Answers the hello, then records the rest until the client closes or is silent for 10 s.
    private func converse(_ socket: Socket) {
        var reader = RawStream(socket: socket)
        defer { socket.close() }
        guard let hello = reader.line() else { return }
        if let answer = answer(to: hello) { try? socket.sendAll(answer) }
        let after = reader.rest(silence: .seconds(10))
        conversations.update { $0.append(Conversation(hello: hello, after: after, closedByClient: reader.closed)) }
    }

    private func answer(to hello: String) -> [UInt8]? {
        let welcome = Array(Reply.welcome(version: 2, name: "beta", capacity: 4, jobs: [JobRegistry.scan: "built-in simulated scan"]).line)
        let first = (jsonFields(hello)?["noise"] as? String).flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        let message: [UInt8]
        switch manner {
        case .plainWelcome: return welcome
        case .madeUpHandshake: message = Secrets.randomBytes(32 + welcome.count + 16)
        case .reflectedHandshake: message = first
        case .anotherTokensHandshake:
            var guess = LinkKey(token: Array("a guess at the token, not the token".utf8)).initiator()
            guard let made = try? guess.writeMessage(payload: Array(welcome.dropLast())) else { return nil }
            message = made
        }
        return Array(Reply.handshake(noise: message).line)
    }

    /// Waits (up to 30 s) until a client has ended its connection, then checks every ended
    /// connection: it held the coordinator's version 2 hello with its Noise message and nothing
    /// after it (no request, no ping, no frame), never the token, and the client closed it.
    func expectOnlyTheHello(token: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await conversations.wait(upTo: .seconds(30)) { !$0.isEmpty }
        for conversation in conversations.value {
            let fields = jsonFields(conversation.hello) ?? [:]
            #expect(Set(fields.keys) == ["type", "version", "noise"] && fields["version"] as? Int == 2, "\(conversation.hello)",
                    sourceLocation: sourceLocation)
            #expect(conversation.after.isEmpty, "after the hello: \(String(decoding: conversation.after, as: UTF8.self))",
                    sourceLocation: sourceLocation)
            #expect(!TokenScratch.leaks(token, into: conversation.hello + String(decoding: conversation.after, as: UTF8.self)),
                    sourceLocation: sourceLocation)
            #expect(conversation.closedByClient, "the coordinator left the connection open", sourceLocation: sourceLocation)
        }
    }
}

/// One connection's bytes read raw, blocking: a first line, then whatever follows (frames need
/// not hold a newline).
private struct RawStream {
    let socket: Socket
    private var buffer: [UInt8] = []
    private(set) var closed = false

    init(socket: Socket) {
        self.socket = socket
    }

    /// The first line, without its newline; nil if the client closed or was silent for 10 s first.
    mutating func line() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                defer { buffer.removeFirst(newline + 1) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            guard receive(silence: .seconds(10)) else { return nil }
        }
    }

    /// Every byte from here until the client closes, or is silent for `silence`.
    mutating func rest(silence: Duration) -> [UInt8] {
        while receive(silence: silence) {}
        defer { buffer = [] }
        return buffer
    }

    private mutating func receive(silence: Duration) -> Bool {
        guard !closed else { return false }
        socket.setReceiveTimeout(silence)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        do {
            let count = try chunk.withUnsafeMutableBytes { try socket.receive(into: $0) }
            if count == 0 { closed = true }
            buffer += chunk.prefix(count)
            return count > 0
        } catch {
            // A reset is a close; a receive timeout is silence.
            let silent = (error as? SocketError).map { $0.code == EAGAIN || $0.code == EWOULDBLOCK } ?? false
            if !silent { closed = true }
            return false
        }
    }
}
