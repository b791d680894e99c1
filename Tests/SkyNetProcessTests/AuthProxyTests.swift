import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport

/// A recording proxy between a real coordinator (`skynet scan`) and a real node, both with the
/// token. The token never crosses the wire and nothing after the handshake lines is readable:
/// every byte is a frame. A byte flipped in a frame of either side, or a frame sent again, ends
/// the link, its tasks run elsewhere, and every sector is reported completed exactly once, with
/// its genuine result.
///
/// The proxy cannot read a frame, so a test picks one by its index after the handshake line,
/// which is also the counter its sender sealed it with. In these scans of the built-in task the
/// coordinator sends only `scan` requests and the node only results (a coordinator pings a node
/// only while it runs jobs or transfers, or after 15 s of silence), so frame 1 from the node is
/// its second result and frame 1 from the coordinator its second request.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct AuthProxyTests {
        /// The whole exchange of a scan through the proxy holds no 8 bytes of the token; each
        /// direction is one documented handshake line, then frames that cover the rest exactly
        /// and show nothing of the JSON inside; each request and each result is a frame.
        @Test func theTokenNeverCrossesTheWireAndEverythingAfterTheHandshakeIsFrames() async throws {
            try await withProxiedCluster(direct: false) { cluster in
                let scan = try await cluster.scan(total: 12)
                let events = try ScanEvents(scan)
                events.expectEverySectorCompletedOnce(total: 12)
                #expect(events.completions.values.allSatisfy { $0.map(\.system) == ["beta"] }, "all through the proxy")

                let recordings = cluster.proxy.recordings
                try #require(recordings.count >= 1)
                var requests = 0, results = 0
                for recording in recordings {
                    #expect(!recording.truncated)
                    for direction in [RecordingProxy.Direction.fromClient, .fromServer] {
                        let bytes = recording.bytes(direction)
                        #expect(bytes.count > 500, "\(direction): the scan went through the proxy")
                        let found = firstWindow(of: cluster.token, in: bytes)
                        #expect(found == nil, "\(direction) holds \(found.map { String(decoding: $0, as: UTF8.self) } ?? "")")
                    }
                    let link = try EncryptedExchange(recording, token: cluster.token)
                    requests += link.sent.count
                    results += link.received.count
                }
                #expect(requests >= 12 && results >= 12, "\(requests) frames from the coordinator, \(results) from the node")
            }
        }

        /// The checks above can fail: through the same proxy, a client that offers the token as
        /// protocol version 1 did, in plain text, shows it to the recorder and the same window
        /// search finds it; the node's refusal, plain JSON, shows the marks the frame check
        /// looks for. The node refuses that hello without looking at the token.
        @Test func theRecorderSeesWhatIsSentInPlainText() async throws {
            try await withProxiedCluster(direct: false) { cluster in
                let client = try await RawLineClient(port: cluster.proxy.port, first: #"{"type":"hello","version":1,"name":"v1","token":"\#(cluster.token)"}"#)
                let refusal = try await client.receive()
                #expect(refusal?["type"] as? String == "error" && refusal?["code"] as? String == "unsupported-version", "\(String(describing: refusal))")
                let message = refusal?["message"] as? String ?? ""
                let names = #"this node takes the token only on an encrypted link: send a version 2 hello with a Noise handshake, "#
                    + #"and no "token", "auth" or "nonce" ("#
                #expect(message.hasPrefix(names) && message.hasSuffix("(the token in plain text and the hmac-sha256 handshake of version 1 are refused)"),
                        "\(message)")
                #expect(try await client.receive() == nil, "the refusal closes the connection")
                client.close()
                #expect(try await withTimeout(.seconds(10)) { await cluster.proxy.waitForEnd(ofConnection: 0) })

                let recording = try #require(cluster.proxy.recordings.first)
                #expect(firstWindow(of: cluster.token, in: recording.bytes(.fromClient)) != nil)
                #expect(firstWindow(of: cluster.token, in: Array(cluster.token.utf8.dropFirst(30))) != nil, "an 8-byte tail")
                #expect(plainTextMarks(in: recording.bytes(.fromServer)).contains(#""type":"#), "\(recording.lines(.fromServer))")
            }
        }

        /// A byte flipped in the node's frame 1 (its second result): the coordinator's frame 1
        /// does not open, so it ends the link at once; the tasks pending there run again on
        /// gamma (the proxy lets beta in only once); nothing of that frame or after it counts.
        @Test func aFlippedByteInANodeFrameEndsTheLinkAndItsTasksRunElsewhere() async throws {
            let tamper = RecordingProxy.Tamper.flip(.fromServer, frame: 1)
            try await withProxiedCluster(direct: true, tamper: tamper, proxyConnections: 1) { cluster in
                let scan = try await cluster.scan(total: 24)
                let events = try ScanEvents(scan)
                events.expectEverySectorCompletedOnce(total: 24)
                try expectOneFlip(cluster.proxy, .fromServer, frame: 1)

                let disconnect = events.of("disconnected").first { $0["system"] as? String == "beta" }
                let reason = disconnect?["reason"] as? String ?? "none"
                #expect(reason.contains("frame 1 does not open: altered, replayed, reordered, cut or not from the peer"), "\(reason)\n\(scan.stdout)")
                // Only frame 0 opened: at most one result of beta's counts.
                #expect(events.completed(by: "beta") <= 1, "\(scan.stdout)")
                events.expectRetriedSectorsCompletedOn("gamma", after: "beta")
                #expect(try await withTimeout(.seconds(10)) { await cluster.proxy.waitForEnd(ofConnection: 0) })
            }
        }

        /// A byte flipped in the coordinator's frame 1 (its second request): the node refuses
        /// it, logging why, and closes; the coordinator runs the pending tasks again on gamma
        /// (the proxy lets beta in only once).
        @Test func aFlippedByteInACoordinatorFrameIsRefusedByTheNodeAndTheScanCompletes() async throws {
            let tamper = RecordingProxy.Tamper.flip(.fromClient, frame: 1)
            try await withProxiedCluster(direct: true, tamper: tamper, proxyConnections: 1) { cluster in
                let events = try await scanThroughANodeThatRefuses(cluster, frame: 1)
                try expectOneFlip(cluster.proxy, .fromClient, frame: 1)
                // The node read frame 0 alone: at most its one task can have been done there.
                #expect(events.completed(by: "beta") <= 1)
                events.expectRetriedSectorsCompletedOn("gamma", after: "beta")
                #expect(try await withTimeout(.seconds(10)) { await cluster.proxy.waitForEnd(ofConnection: 0) })
            }
        }

        /// The coordinator's frame 0, byte for byte, sent again after its frame 1: the node
        /// expects frame 2 there and refuses the replay (it does not open with that counter),
        /// and closes; the scan still completes every sector once.
        @Test func aReplayedCoordinatorFrameIsRefusedByTheNodeAndTheScanCompletes() async throws {
            let tamper = RecordingProxy.Tamper.replay(.fromClient, frame: 0, laterBy: 1)
            try await withProxiedCluster(direct: true, tamper: tamper) { cluster in
                let events = try await scanThroughANodeThatRefuses(cluster, frame: 2)
                let tampering = try #require(cluster.proxy.tamperings.first)
                #expect(cluster.proxy.tamperings.count == 1 && tampering.connection == 0 && tampering.frame == 0)
                let frames = try EncryptedExchange(cluster.proxy.recordings[0], token: cluster.token).sent
                #expect(frames.count >= 2 && tampering.original == frames[0], "the replay is frame 0 as it was sent")
                #expect(frames.count >= 2 && tampering.sent == frames[1] + frames[0], "right after frame 1")
                #expect(!events.of("retry").isEmpty, "the tasks pending on the refused connection ran again")
                #expect(try await withTimeout(.seconds(10)) { await cluster.proxy.waitForEnd(ofConnection: 0) })
            }
        }
    }
}

// MARK: - The cluster behind the proxy

/// Scans 24 sectors through a proxy that alters a coordinator frame: every sector completes
/// once, beta logs its disconnect saying that its `frame` (its counter) does not open, and the
/// coordinator reports beta disconnected. Returns the events.
private func scanThroughANodeThatRefuses(_ cluster: ProxiedCluster, frame: Int) async throws -> ScanEvents {
    let scan = try await cluster.scan(total: 24)
    let events = try ScanEvents(scan)
    events.expectEverySectorCompletedOnce(total: 24)
    let logged = try await cluster.beta.waitForErrorLine(timeout: .seconds(30)) { $0.contains("[Node] Disconnected: coordinator") }
    #expect(logged.hasPrefix("[Node] Disconnected: coordinator from 127.0.0.1:")
                && logged.hasSuffix(" (frame \(frame) does not open: altered, replayed, reordered, cut or not from the peer)"), "\(logged)")
    #expect(events.of("disconnected").contains { $0["system"] as? String == "beta" }, "\(scan.stdout)")
    return events
}

/// The proxy's one change: a flip of one byte, in the ciphertext, of `direction`'s frame
/// `frame` on the first connection, as the recording has that frame.
@discardableResult
private func expectOneFlip(_ proxy: RecordingProxy, _ direction: RecordingProxy.Direction, frame: Int,
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> RecordingProxy.Tampering {
    let tampering = try #require(proxy.tamperings.first, sourceLocation: sourceLocation)
    #expect(proxy.tamperings.count == 1 && tampering.connection == 0 && tampering.direction == direction && tampering.frame == frame,
            sourceLocation: sourceLocation)
    let changed = zip(tampering.original, tampering.sent).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
    #expect(tampering.sent.count == tampering.original.count && changed == [tampering.original.count - 17], "\(changed)",
            sourceLocation: sourceLocation)
    let frames = proxy.recordings[0].units(direction).units.compactMap { unit -> [UInt8]? in
        if case .frame(let bytes) = unit { bytes } else { nil }
    }
    #expect(frames.count > frame && frames[frame] == tampering.original, sourceLocation: sourceLocation)
    return tampering
}

/// The nodes, the proxy in front of beta, and the files a scan of them needs.
private struct ProxiedCluster: Sendable {
    let proxy: RecordingProxy
    let beta: RunningProcess
    let token: String
    let tokenFile: String
    let clusterFile: String

    /// `skynet scan --json` of `total` sectors, dispatch only (every task goes to a node), the
    /// token from a file (the environment holds none).
    func scan(total: Int) async throws -> Finished {
        try await runSkynet([
            "scan", "--cluster", clusterFile, "--token-file", tokenFile, "--json", "--quiet", "--total", String(total),
            "--duration", "0.2", "--local-capacity", "0", "--failing-every", "0", "--timeout", "20",
        ], limit: .seconds(120), environment: ["SKYNET_TOKEN": nil])
    }
}

/// Node `beta` behind a recording proxy (that lets in `proxyConnections` connections, then
/// closes every new one at once) and (`direct`) node `gamma` reached directly, both with a
/// fresh token; the cluster file names beta at the proxy's port. Stops all on every path.
private func withProxiedCluster<T: Sendable>(
    direct: Bool, tamper: RecordingProxy.Tamper? = nil, proxyConnections: Int = 64, _ body: (ProxiedCluster) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-proxy-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    // Letters only, no hex digit: no 8-byte window of it turns up by chance in the base64 of
    // the handshake lines (1 in 64^8 a place) or in ciphertext (1 in 2^64).
    let alphabet = Array("ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ")
    let token = String((0..<40).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    let tokenFile = folder.appendingPathComponent("token").path
    var nodes: [RunningProcess] = []
    func cleanUp() async {
        for node in nodes { node.kill() }
        for node in nodes { _ = try? await node.finish(timeout: .seconds(10)) }
        try? FileManager.default.removeItem(at: folder)
    }
    do {
        guard FileManager.default.createFile(atPath: tokenFile, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ProcessEnded(lines: ["cannot write \(tokenFile)"])
        }
        var entries: [[String: Any]] = [], betaPort = 0
        for name in direct ? ["beta", "gamma"] : ["beta"] {
            let node = try await onOwnThread(named: "test-spawn") {
                try RunningProcess(["node", "--host", "127.0.0.1", "--port", "0", "--name", name, "--failing-every", "0"],
                                   environment: ["SKYNET_TOKEN": token])
            }
            nodes.append(node)
            let line = try await node.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
            let port = try #require(parseListening(line)?.1)
            if name == "beta" { betaPort = port }
            entries.append(["name": name, "host": "127.0.0.1", "port": port])
        }
        let result = try await withRecordingProxy(to: betaPort, tamper: tamper, maxConnections: proxyConnections) { proxy in
            entries[0]["port"] = proxy.port
            let clusterFile = folder.appendingPathComponent("cluster.json").path
            try JSONSerialization.data(withJSONObject: ["nodes": entries]).write(to: URL(fileURLWithPath: clusterFile))
            return try await body(ProxiedCluster(proxy: proxy, beta: nodes[0], token: token, tokenFile: tokenFile, clusterFile: clusterFile))
        }
        await cleanUp()
        return result
    } catch {
        await cleanUp()
        throw error
    }
}

// MARK: - What the scan reported

/// The JSON events of `skynet scan --json`.
private struct ScanEvents {
    struct Completion { let system: String, attempt: Int, result: String }
    let all: [[String: Any]]
    let status: Int32
    let stderr: String

    init(_ scan: Finished) throws {
        all = try scan.lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON event: \(line)")
        }
        status = scan.status
        stderr = scan.stderr
    }

    func of(_ name: String) -> [[String: Any]] { all.filter { $0["event"] as? String == name } }

    /// Per sector, its `completed` events.
    var completions: [Int: [Completion]] {
        Dictionary(grouping: of("completed"), by: { $0["input"] as? Int ?? -1 }).mapValues { events in
            events.map { Completion(system: $0["system"] as? String ?? "", attempt: $0["attempt"] as? Int ?? 0, result: $0["result"] as? String ?? "") }
        }
    }

    /// Sectors completed by `system`.
    func completed(by system: String) -> Int { completions.values.joined().filter { $0.system == system }.count }

    /// Exit 0, each of `total` sectors completed exactly once with its genuine result (the
    /// built-in scan returns the sector's number), nothing failed, and the summary agrees.
    func expectEverySectorCompletedOnce(total: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "\(stderr)", sourceLocation: sourceLocation)
        let counts = completions.mapValues(\.count)
        #expect(counts == Dictionary(uniqueKeysWithValues: (0..<total).map { ($0, 1) }), "\(counts)", sourceLocation: sourceLocation)
        let wrong = completions.filter { input, done in done.contains { $0.result != String(input) } }
        #expect(wrong.isEmpty, "results not of their sector: \(wrong)", sourceLocation: sourceLocation)
        #expect(of("failed").isEmpty, sourceLocation: sourceLocation)
        let summary = of("summary").first
        #expect(summary?["completed"] as? Int == total && summary?["failed"] as? Int == 0, "\(String(describing: summary))",
                sourceLocation: sourceLocation)
    }

    /// Some sector ran again, each retry after a failure on `failed`, and each such sector
    /// completed once, on `system`, from a later attempt.
    func expectRetriedSectorsCompletedOn(_ system: String, after failed: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let retries = of("retry")
        #expect(!retries.isEmpty, "no sector ran again", sourceLocation: sourceLocation)
        #expect(retries.allSatisfy { $0["system"] as? String == failed }, "\(retries)", sourceLocation: sourceLocation)
        for input in Set(retries.compactMap { $0["input"] as? Int }) {
            let completion = completions[input]?.first
            #expect((completion?.attempt ?? 0) >= 2 && completion?.system == system, "sector \(input): \(String(describing: completion))",
                    sourceLocation: sourceLocation)
        }
    }
}
