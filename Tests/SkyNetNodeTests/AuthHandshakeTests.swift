import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetLink
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// The token handshake against a node in this process: our coordinator, a client that does
/// it by hand from the document, and lines tampered with after it.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AuthHandshakeTests {
    static let token = "a token of at least sixteen bytes"
    let nodeTests = NodeHarness()

    /// Runs `body` with a node that requires `token`, its log collected; stopped on every path.
    /// `helloTimeout` nil keeps the harness's bound.
    func withTokenNode<T>(backoff: LoginBackoff = LoginBackoff(), clock: any TimerClock = DeadlineTimer.shared,
                          helloTimeout: Duration? = nil, actors: ClusterActorSystem? = nil,
                          _ body: (Node, LogLines) async throws -> T) async throws -> T {
        var options = nodeTests.options(token: Self.token)
        options.actors = actors
        options.loginBackoff = backoff
        if let helloTimeout { options.helloTimeout = helloTimeout }
        let log = LogLines()
        let node = try await Node.start(options, clock: clock, log: { log.append($0) })
        do {
            let result = try await body(node, log)
            await node.stop(grace: .seconds(1))
            #expect(!log.all.contains { $0.contains(Self.token) }, "the token was logged")
            return result
        } catch {
            await node.stop(grace: .seconds(1))
            throw error
        }
    }

    @Test func aCoordinatorWithTheTokenIsWelcomedOnAuthenticatedLinesAndCanScan() async throws {
        try await withTokenNode { node, log in
            let peer = try await nodeTests.connect(node, token: Self.token)
            defer { peer.close() }
            #expect(peer.welcome.name == "beta")
            let remote = RemoteSystem(name: "beta", peer: peer, timeout: .seconds(10))
            for input in 1...5 {
                #expect(try await remote.run(ScanTask(input: input, duration: 0)) == "\(input)")
            }
            try await log.waitFor("[Node] Connected: coordinator from 127.0.0.1:")
            #expect(log.matching("(authenticated)").count == 1)
        }
    }

    @Test func aCoordinatorWithAWrongTokenOrNoneIsRefusedUnauthorized() async throws {
        try await withTokenNode { node, log in
            await #expect(throws: WireError(code: "unauthorized", message: "wrong token (the proof does not match)")) {
                _ = try await nodeTests.connect(node, token: "not the token, but as long")
            }
            await #expect(throws: WireError(code: "unauthorized",
                                            message: "this node requires the token: use the hmac-sha256 handshake")) {
                _ = try await nodeTests.connect(node, token: nil)
            }
            try await log.waitFor("[Node] Refused 127.0.0.1:", count: 2)
            #expect(log.matching("Connected:").isEmpty)
        }
    }

    /// What `handshake` leaves: the keys of both directions and the welcome's JSON.
    struct HandSession: Sendable {
        let transcript: HandTranscript
        let welcome: String
    }

    /// The handshake by hand: hello with a nonce, the challenge read, the proof computed from
    /// the document's labels, and the welcome checked to be sealed with the node's key. Runs on
    /// a thread of its own: it throws what is wrong. `thinking` is how long the client takes
    /// over its proof once it has the challenge (a slow or far client).
    func handshake(_ client: inout RawLines, name: String = "hand", thinking: Duration = .zero) throws -> HandSession {
        let hello = HandTranscript.hello(name: name, nonce: Secrets.randomBytes(32))
        try client.send(hello)
        let challenge = client.readLine()
        let fields = challenge.flatMap(jsonFields)
        try check(fields?["type"] as? String == "challenge", "expected a challenge, got \(challenge ?? "nothing")")
        let nonce = (fields?["nonce"] as? String).flatMap { Secrets.bytes(fromHex: $0) } ?? []
        try check(nonce.count == 32, "the challenge's nonce is not 32 bytes in hex: \(challenge ?? "")")
        let transcript = HandTranscript(token: Self.token, hello: Array(hello.utf8), nodeNonce: nonce)
        if thinking > .zero { sleepOnThisThread(for: thinking) }
        try client.send(#"{"type":"auth","proof":"\#(Secrets.hex(transcript.proof))"}"#)
        let line = client.readLine()
        guard let welcome = line.flatMap(unseal) else { throw CheckFailed(description: "the welcome is not sealed: \(line ?? "nothing")") }
        try check(welcome.sequence == 0, "the welcome's sequence number is \(welcome.sequence)")
        try check(welcome.mac == HandTranscript.lineMAC(welcome.json, sequence: 0, key: transcript.nodeToCoordinator),
                  "the welcome's MAC does not verify: \(line ?? "")")
        return HandSession(transcript: transcript, welcome: welcome.json)
    }

    @Test func aHandshakeDoneByHandGetsASealedWelcomeAndSealedReplies() async throws {
        try await withTokenNode { node, log in
            let replies = try await onOwnThread(named: "test-hand") { () throws -> [String] in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                let session = try handshake(&client)
                let toNode = session.transcript.coordinatorToNode
                try client.send(HandTranscript.seal(#"{"type":"scan","id":1,"task":{"id":"\#(UUID())","input":42,"duration":0}}"#,
                                                    sequence: 0, key: toNode))
                try client.send(HandTranscript.seal(#"{"type":"ping","id":2}"#, sequence: 1, key: toNode))
                var replies: [String] = []
                for expected in UInt64(1)...2 {
                    let line = client.readLine()
                    guard let reply = line.flatMap(unseal) else { throw CheckFailed(description: "not sealed: \(line ?? "nothing")") }
                    try check(reply.sequence == expected, "sequence \(reply.sequence), expected \(expected)")
                    try check(reply.mac == HandTranscript.lineMAC(reply.json, sequence: expected, key: session.transcript.nodeToCoordinator),
                              "the MAC of \(reply.json) does not verify")
                    replies.append(reply.json)
                }
                return replies + [session.welcome]
            }
            let types = replies.compactMap { jsonFields($0)?["type"] as? String }.sorted()
            #expect(types == ["pong", "result", "welcome"])
            #expect(replies.contains { jsonFields($0)?["name"] as? String == "beta" })
            #expect(replies.contains { jsonFields($0)?["result"] as? String == "42" })
            try await log.waitFor("[Node] Connected: hand from 127.0.0.1:")
        }
    }

    enum Tamper: String, Sendable, CaseIterable, CustomStringConvertible {
        case plain, altered, replayed, reordered
        var description: String { rawValue }

        /// Why the node closes the connection, as its log says.
        var reason: LineSeal.Rejection {
            switch self {
            case .plain: .missing
            case .altered: .wrongMAC(1)
            case .replayed: .replayed(0)
            case .reordered: .outOfOrder(2, expected: 1)
            }
        }
    }

    /// After a good sealed ping, one bad line: the node answers nothing more, closes the
    /// connection and logs why.
    @Test(arguments: Tamper.allCases)
    func aBadLineAfterTheHandshakeClosesTheConnection(_ tamper: Tamper) async throws {
        try await withTokenNode { node, log in
            let (after, closed) = try await onOwnThread(named: "test-hand") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                let key = try handshake(&client).transcript.coordinatorToNode
                let first = HandTranscript.seal(#"{"type":"ping","id":1}"#, sequence: 0, key: key)
                try client.send(first)
                let pong = client.readLine()
                try check(pong.flatMap(unseal)?.json.contains(#""pong""#) == true, "expected a sealed pong, got \(pong ?? "nothing")")
                switch tamper {
                case .plain:
                    try client.send(#"{"type":"ping","id":2}"#)
                case .altered:
                    let sealed = HandTranscript.seal(#"{"type":"ping","id":2}"#, sequence: 1, key: key)
                    try client.send(sealed.replacingOccurrences(of: #""id":2"#, with: #""id":3"#))
                case .replayed:
                    try client.send(first)
                case .reordered:
                    try client.send(HandTranscript.seal(#"{"type":"ping","id":3}"#, sequence: 2, key: key))
                }
                return (client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(closed, "the node kept the connection open")
            #expect(after.isEmpty, "the node answered a bad line: \(after)")
            try await log.waitFor("[Node] Disconnected: hand from 127.0.0.1:")
            let reason = "(\(tamper.reason))"
            #expect(log.matching("[Node] Disconnected: hand").allSatisfy { $0.hasSuffix(reason) }, "\(log.all)")
            try await awaitState { node.connectionCount == 0 }
        }
    }

    @Test func aVersionOneHelloWithThePlainTokenIsServedWithAWarning() async throws {
        try await withTokenNode { node, log in
            let lines = try await onOwnThread(named: "test-v1") { () throws -> [String] in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"old","token":"\#(Self.token)"}"#)
                let welcome = client.readLine() ?? ""
                try client.send(#"{"type":"ping","id":1}"#)  // plain lines: v1 has no seal
                return [welcome, client.readLine() ?? ""]
            }
            #expect(jsonFields(lines[0])?["type"] as? String == "welcome", "\(lines)")
            #expect(jsonFields(lines[1])?["type"] as? String == "pong", "\(lines)")
            let warning = try await log.waitFor("[Node] Warning: old from 127.0.0.1:")
            #expect(warning.first?.contains("sent the token in plain text") == true)
        }
    }

    @Test func aVersionOneHelloWithAWrongPlainTokenIsRefused() async throws {
        try await withTokenNode { node, log in
            let (lines, closed) = try await onOwnThread(named: "test-v1") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"old","token":"not the token, but as long as it"}"#)
                return (client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(closed)
            #expect(lines.count == 1)
            #expect(jsonFields(lines.first ?? "")?["code"] as? String == "unauthorized", "\(lines)")
            // A wrong token is a failed login, logged as one; it is not "the token" in plain text.
            try await log.waitFor("[Node] Refused 127.0.0.1:")
            #expect(log.matching("plain text").isEmpty, "\(log.matching("Warning"))")
        }
    }
}

/// Nodes that pretend to know the token: our coordinator refuses each one and sends it nothing.
@Suite(.timeLimit(.minutes(3)))
struct ImpostorNodeTests {
    @Test(arguments: ImpostorNode.Script.allCases)
    func aNodeThatCannotProveTheTokenIsRefusedAndSentNothing(_ script: ImpostorNode.Script) async throws {
        let impostor = try await ImpostorNode.start(script)
        defer { impostor.stop() }
        for _ in 0..<2 {
            let error = await #expect(throws: PeerUnauthenticated.self) {
                _ = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: impostor.port,
                                                  token: AuthHandshakeTests.token, timeout: .seconds(5))
            }
            #expect(error?.reason == "it does not know the token")
            #expect(error?.peer == "beta")
        }
        let conversations = try await impostor.waitForConversations(2)
        for conversation in conversations {
            #expect(conversation.closedByClient, "the coordinator kept the link open")
            let types = conversation.lines.compactMap { jsonFields($0)?["type"] as? String }
            #expect(types == (script == .plainWelcome ? ["hello"] : ["hello", "auth"]), "\(conversation.lines)")
            #expect(conversation.lines.count == types.count, "\(conversation.lines)")
            #expect(!conversation.lines.joined().contains(AuthHandshakeTests.token))
            #expect(jsonFields(conversation.lines[0])?["token"] == nil)
            #expect(jsonFields(conversation.lines[0])?["auth"] as? String == "hmac-sha256")
        }
    }

    /// Through the links of a scan: the peer is reported unauthorized, with the reason, and
    /// never becomes a system that work could go to.
    @Test func peerLinksReportAnImpostorAsUnauthorizedAndNeverAddIt() async throws {
        let impostor = try await ImpostorNode.start(.challengeThenMadeUpSeal)
        defer { impostor.stop() }
        let systems = Systems()
        let events = LogLines()
        let cluster = ClusterConfig(nodes: [.init(name: "beta", port: impostor.port)])
        let links = PeerLinks(cluster: cluster, systems: systems,
                              settings: .init(capacity: 4, timeout: .seconds(30), token: AuthHandshakeTests.token)) { event in
            events.append(event.description)
        }
        try await events.waitFor("[Cluster] Unauthorized")
        let everyPeerRefused = links.everyPeerRefused
        #expect(try await withTimeout(.seconds(10)) { await everyPeerRefused.value }.contains("no peer proved it knows the token"))
        #expect(await systems.names.isEmpty)
        await links.stop()
        #expect(events.all == ["[Cluster] Unauthorized: beta (it does not know the token)"])
        let conversation = try #require(try await impostor.waitForConversations(1).first)
        #expect(conversation.lines.compactMap { jsonFields($0)?["type"] as? String } == ["hello", "auth"])
    }
}
