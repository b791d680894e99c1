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

/// The encrypted link's handshake against a node in this process: our coordinator, a client
/// that frames by hand from the document, and frames tampered with after it.
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

    @Test func aCoordinatorWithTheTokenIsWelcomedOnAnEncryptedLinkAndCanScan() async throws {
        try await withTokenNode { node, log in
            let peer = try await nodeTests.connect(node, token: Self.token)
            defer { peer.close() }
            #expect(peer.welcome.name == "beta")
            #expect(peer.connection.isEncrypted)
            let remote = RemoteSystem(name: "beta", peer: peer, timeout: .seconds(10))
            for input in 1...5 {
                #expect(try await remote.run(ScanTask(input: input, duration: 0)) == "\(input)")
            }
            try await log.waitFor("[Node] Connected: coordinator from 127.0.0.1:")
            #expect(log.matching("(encrypted)").count == 1)
        }
    }

    @Test func aCoordinatorWithAWrongTokenOrNoneIsRefusedUnauthorized() async throws {
        try await withTokenNode { node, log in
            await #expect(throws: WireError(code: "unauthorized", message: "wrong token (the handshake does not open)")) {
                _ = try await nodeTests.connect(node, token: "not the token, but as long")
            }
            await #expect(throws: WireError(code: "unauthorized",
                                            message: "this node requires the token: send a version 2 hello with a Noise handshake")) {
                _ = try await nodeTests.connect(node, token: nil)
            }
            try await log.waitFor("[Node] Refused 127.0.0.1:", count: 2)
            #expect(log.matching("Connected:").isEmpty)
        }
    }

    /// A node that holds hellos back (its network failed to log in) answers after the
    /// coordinator's timeout: the coordinator waits the longest hold on top, so it is slowed by
    /// someone else's guesses, not refused.
    @Test func aCoordinatorWaitsOutAHelloTheNodeHoldsBack() async throws {
        var backoff = LoginBackoff()
        backoff.freeFailures = 0
        backoff.delays = Backoff(first: .milliseconds(1500), most: .milliseconds(1500))
        try await withTokenNode(backoff: backoff) { node, log in
            await #expect(throws: WireError.self) { _ = try await nodeTests.connect(node, token: "not the token, but as long") }
            let clock = ContinuousClock(), start = clock.now
            let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: Self.token, timeout: .seconds(1))
            defer { peer.close() }
            #expect(clock.now - start >= .milliseconds(1400), "the hello was not held back: the test proves nothing")
            #expect(peer.connection.isEncrypted)
        }
    }

    @Test func aHandshakeDoneByHandGetsTheWelcomeAndEncryptedReplies() async throws {
        try await withTokenNode { node, log in
            let replies = try await onOwnThread(named: "test-hand") { () throws -> [String] in
                var client = try EncryptedClient(port: node.port, token: Self.token)
                defer { client.close() }
                try client.send(#"{"type":"scan","id":1,"task":{"id":"\#(UUID())","input":42,"duration":0}}"#)
                try client.send(#"{"type":"ping","id":2}"#)
                var replies = [client.welcome]
                for _ in 1...2 { replies.append(try client.read() ?? "nothing") }
                return replies
            }
            let types = replies.compactMap { jsonFields($0)?["type"] as? String }.sorted()
            #expect(types == ["pong", "result", "welcome"])
            #expect(jsonFields(replies[0])?["version"] as? Int == 2)
            #expect(jsonFields(replies[0])?["name"] as? String == "beta")
            #expect(replies.contains { jsonFields($0)?["result"] as? String == "42" })
            try await log.waitFor("[Node] Connected: hand from 127.0.0.1:")
        }
    }

    enum Tamper: String, Sendable, CaseIterable, CustomStringConvertible {
        case plain, altered, replayed, reordered, length, truncated
        var description: String { rawValue }
    }

    /// After a good ping, one bad frame: the node answers nothing more (it runs nothing),
    /// closes the connection and logs why.
    @Test(arguments: Tamper.allCases)
    func aBadFrameAfterTheHandshakeClosesTheConnection(_ tamper: Tamper) async throws {
        try await withTokenNode { node, log in
            let (after, closed) = try await onOwnThread(named: "test-hand") { () throws -> ([String], Bool) in
                var client = try EncryptedClient(port: node.port, token: Self.token)
                defer { client.close() }
                let first = client.frame(#"{"type":"ping","id":1}"#)
                try client.sendRaw(first)
                let pong = try client.read()
                try check(pong?.contains(#""pong""#) == true, "expected a pong, got \(pong ?? "nothing")")
                let scan = #"{"type":"scan","id":2,"task":{"id":"\#(UUID())","input":7,"duration":0}}"#
                switch tamper {
                case .plain:
                    try client.sendRaw(Array((scan + "\n").utf8))
                case .altered:
                    var frame = client.frame(scan)
                    frame[10] ^= 0x01
                    try client.sendRaw(frame)
                case .replayed:
                    try client.sendRaw(first)
                case .reordered:
                    _ = client.frame(#"{"type":"ping","id":3}"#)  // made, never sent
                    try client.send(scan)
                case .length:
                    var frame = client.frame(scan)
                    frame[3] &-= 1
                    try client.sendRaw(frame + [0])
                case .truncated:
                    let frame = client.frame(scan)
                    try client.sendRaw(Array(frame.dropLast(5)))
                    client.socket.shutdown(reading: false, writing: true)
                }
                return (try client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(closed, "the node kept the connection open")
            #expect(after.isEmpty, "the node answered a bad frame: \(after)")
            try await log.waitFor("[Node] Disconnected: hand from 127.0.0.1:")
            // A plain line read as a frame: its first 4 bytes, `{"ty`, make a length far over the limit.
            let expected = switch tamper {
            case .truncated: "(closed by peer)"
            case .plain: "over the limit of 1048576 bytes of message and a 16-byte tag)"
            default: "does not open: altered, replayed, reordered, cut or not from the peer)"
            }
            #expect(log.matching("[Node] Disconnected: hand").allSatisfy { $0.hasSuffix(expected) }, "\(log.all)")
            #expect(node.system.counters.completed == 0, "a tampered scan ran")
            try await awaitState { node.connectionCount == 0 }
        }
    }

    /// A client of protocol version 1 that offers the token (in plain text, or by the
    /// unencrypted hmac-sha256 handshake) is refused with the version it needs, right token or
    /// wrong: the token is never looked at, so it is no failed login either.
    @Test(arguments: [#""token":"\#(token)""#, #""token":"not the token, but as long as it""#,
                      #""auth":"hmac-sha256","nonce":"\#(String(repeating: "ab", count: 32))""#])
    func aVersionOneHelloThatOffersTheTokenIsRefusedNamingVersionTwo(_ offer: String) async throws {
        try await withTokenNode { node, log in
            let (lines, closed) = try await onOwnThread(named: "test-v1") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"old",\#(offer)}"#)
                return (client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(closed)
            #expect(lines.count == 1)
            let fields = jsonFields(lines.first ?? "")
            #expect(fields?["code"] as? String == "unsupported-version", "\(lines)")
            #expect((fields?["message"] as? String)?.contains("send a version 2 hello with a Noise handshake") == true, "\(lines)")
            try await log.waitFor("[Node] Refused 127.0.0.1:")
            #expect(node.logins.withLock { $0.total } == 0)
        }
    }

    /// The token (or version 1's handshake fields) beside a good Noise handshake is refused
    /// too: the client leaked the token, and must hear so rather than be served.
    @Test(arguments: [#""token":"\#(token)""#, #""auth":"hmac-sha256""#, #""nonce":"00""#])
    func aHandshakeBesideTheOldTokenFieldsIsRefused(_ offer: String) async throws {
        try await withTokenNode { node, log in
            let (lines, closed) = try await onOwnThread(named: "test-mixed") { () throws -> ([String], Bool) in
                var initiator = LinkKey(token: Array(Self.token.utf8)).initiator()
                let first = try initiator.writeMessage(payload: Array(#"{"type":"hello","version":2,"name":"mixed"}"#.utf8))
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":2,"noise":"\#(first.base64)",\#(offer)}"#)
                return (client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(closed)
            #expect(lines.count == 1 && jsonFields(lines[0])?["code"] as? String == "unsupported-version", "\(lines)")
            #expect(log.matching("Connected:").isEmpty)
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
            #expect(types == ["hello"], "\(conversation.lines)")
            #expect(conversation.lines.count == 1, "\(conversation.lines)")
            #expect(!conversation.lines.joined().contains(AuthHandshakeTests.token))
            let hello = jsonFields(conversation.lines[0])
            #expect(hello?["token"] == nil && hello?["auth"] == nil && hello?["name"] == nil, "\(conversation.lines)")
            #expect(hello?["version"] as? Int == 2 && hello?["noise"] is String, "\(conversation.lines)")
        }
    }

    /// Through the links of a scan: the peer is reported unauthorized, with the reason, and
    /// never becomes a system that work could go to.
    @Test func peerLinksReportAnImpostorAsUnauthorizedAndNeverAddIt() async throws {
        let impostor = try await ImpostorNode.start(.madeUpHandshake)
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
        #expect(conversation.lines.compactMap { jsonFields($0)?["type"] as? String } == ["hello"])
    }
}
