import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport

/// A recording proxy between a real coordinator (`skynet scan`)
/// and a real node, both with the token. The token never crosses the wire, a flipped byte in
/// a line after the handshake closes the connection and its tasks run elsewhere, a replayed
/// line is refused; every sector is reported completed exactly once.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct AuthProxyTests {
        /// The whole exchange of a scan through the proxy holds neither the token nor any 8
        /// bytes of it, and the handshake lines are the documented ones.
        @Test func theTokenNeverCrossesTheWireAndTheHandshakeIsAsDocumented() async throws {
            try await withProxiedCluster(direct: false) { cluster in
                let scan = try await cluster.scan(total: 12)
                let events = try ScanEvents(scan)
                events.expectEverySectorCompletedOnce(total: 12)
                #expect(events.completions.values.allSatisfy { $0.map(\.system) == ["beta"] }, "all through the proxy")

                let recordings = cluster.proxy.recordings
                try #require(recordings.count >= 1)
                for recording in recordings {
                    #expect(!recording.truncated)
                    for direction in [RecordingProxy.Direction.fromClient, .fromServer] {
                        let bytes = recording.bytes(direction)
                        #expect(bytes.count > 500, "\(direction): the scan went through the proxy")
                        let found = firstWindow(of: cluster.token, in: bytes)
                        #expect(found == nil, "\(direction) holds \(found.map { String(decoding: $0, as: UTF8.self) } ?? "")")
                    }
                }
                try expectDocumentedHandshake(recordings[0])
            }
        }

        /// The check above can fail: a protocol v1 client's plain-text token is seen by the
        /// same recorder and the same window search.
        @Test func theRecorderSeesATokenSentInPlainText() async throws {
            try await withProxiedCluster(direct: false) { cluster in
                let client = try await RawLineClient(port: cluster.proxy.port, first: #"{"type":"hello","version":1,"name":"v1","token":"\#(cluster.token)"}"#)
                let welcome = try await client.receive()
                #expect(welcome?["type"] as? String == "welcome")
                let sent = try #require(cluster.proxy.recordings.first).bytes(.fromClient)
                #expect(firstWindow(of: cluster.token, in: sent) != nil)
                #expect(firstWindow(of: cluster.token, in: Array(cluster.token.utf8.dropFirst(30))) != nil, "an 8-byte tail")
            }
        }

        /// A byte flipped in the node's second result: the coordinator closes that connection
        /// at once (the MAC is wrong), the tasks pending on it run again on gamma (the proxy
        /// lets beta in only once), and every sector is reported completed once, never with
        /// the forged result.
        @Test func aFlippedByteInANodeReplyClosesTheConnectionAndItsTasksRunElsewhere() async throws {
            let tamper = RecordingProxy.Tamper.flip(.fromServer, occurrence: 1, matching: #""type":"result""#)
            try await withProxiedCluster(direct: true, tamper: tamper, proxyConnections: 1) { cluster in
                let scan = try await cluster.scan(total: 24)
                let events = try ScanEvents(scan)
                events.expectEverySectorCompletedOnce(total: 24)
                let tampering = try #require(cluster.proxy.tamperings.first)
                #expect(cluster.proxy.tamperings.count == 1 && tampering.connection == 0)
                let sequence = try #require(sequenceNumber(of: tampering.original))

                let disconnect = events.of("disconnected").first { $0["system"] as? String == "beta" }
                let reason = disconnect?["reason"] as? String ?? "none"
                #expect(reason.contains("a line whose MAC is wrong (sequence \(sequence))"), "\(reason)\n\(scan.stdout)")

                // The forged result and every result after it on that connection were dropped:
                // each of their sectors ran again and completed once, from a later attempt.
                let recording = cluster.proxy.recordings[0]
                let inputs = inputsByTask(recording.lines(.fromClient))
                let later = recording.lines(.fromServer)[tampering.lineIndex...].compactMap { taskOfResult($0) }
                let dropped = later.compactMap { inputs[$0] }
                #expect(!dropped.isEmpty && dropped.count == later.count)
                for input in dropped {
                    #expect(events.retries(of: input) >= 1, "sector \(input) was not re-run")
                    let completion = events.completions[input]?.first
                    #expect((completion?.attempt ?? 0) >= 2 && completion?.system == "gamma", "sector \(input): \(String(describing: completion))")
                }
                let tamperedInput = try #require(taskOfResult(String(decoding: tampering.original, as: UTF8.self)).flatMap { inputs[$0] })
                let forged = try #require(resultText(of: tampering.sent)), genuine = try #require(resultText(of: tampering.original))
                #expect(forged != genuine)
                #expect(events.completions[tamperedInput]?.map(\.result) == [genuine], "sector \(tamperedInput): the forged result \(forged)")
                #expect(await cluster.proxy.waitForEnd(ofConnection: 0))
            }
        }

        /// A byte flipped in the coordinator's second scan request: the node refuses the line
        /// (logging the MAC reason) and closes; the coordinator re-runs the pending tasks on
        /// gamma (the proxy lets beta in only once).
        @Test func aFlippedByteInACoordinatorRequestIsRefusedByTheNodeAndTheScanCompletes() async throws {
            let tamper = RecordingProxy.Tamper.flip(.fromClient, occurrence: 1, matching: #""type":"scan""#)
            try await withProxiedCluster(direct: true, tamper: tamper, proxyConnections: 1) { cluster in
                let (events, tampering) = try await scanThroughANodeThatRefuses(cluster) { sequence in
                    "(a line whose MAC is wrong (sequence \(sequence)): altered, or not from the peer)"
                }

                let input = try #require(inputOfRequest(tampering.original))
                #expect(events.retries(of: input) >= 1, "sector \(input) was not re-run")
                let completion = events.completions[input]?.first
                #expect((completion?.attempt ?? 0) >= 2 && completion?.system == "gamma", "sector \(input): \(String(describing: completion))")
                #expect(await cluster.proxy.waitForEnd(ofConnection: 0))
            }
        }

        /// The coordinator's first scan request sent again after its second: the node refuses
        /// the replay (its sequence number was already received) and closes; the scan still
        /// completes every sector once.
        @Test func aReplayedRequestIsRefusedByTheNodeAndTheScanCompletes() async throws {
            let tamper = RecordingProxy.Tamper.replay(.fromClient, occurrence: 0, matching: #""type":"scan""#, laterBy: 1)
            try await withProxiedCluster(direct: true, tamper: tamper) { cluster in
                let (events, _) = try await scanThroughANodeThatRefuses(cluster) { sequence in
                    "(a replayed line (sequence \(sequence) was already received))"
                }
                #expect(events.of("retry").count >= 1, "the tasks pending on the refused connection ran again")
                #expect(await cluster.proxy.waitForEnd(ofConnection: 0))
            }
        }
    }
}

// MARK: - The cluster behind the proxy

/// Node `beta` behind a recording proxy (that lets in `proxyConnections` connections, then
/// closes every new one at once) and (`direct`) node `gamma` reached directly, both with a
/// fresh token; the cluster file names beta at the proxy's port. Stops all on every path.
/// Scans 24 sectors through a proxy that alters a coordinator line: every sector completes
/// once, beta logs its disconnect with `reason` (given the altered line's sequence number), and
/// the coordinator reports beta disconnected. Returns the events and what the proxy changed.
private func scanThroughANodeThatRefuses(
    _ cluster: ProxiedCluster, reason: (UInt64) -> String
) async throws -> (ScanEvents, RecordingProxy.Tampering) {
    let scan = try await cluster.scan(total: 24)
    let events = try ScanEvents(scan)
    events.expectEverySectorCompletedOnce(total: 24)
    let tampering = try #require(cluster.proxy.tamperings.first)
    let sequence = try #require(sequenceNumber(of: tampering.original))
    let logged = try await cluster.beta.waitForErrorLine(timeout: .seconds(30)) { $0.contains("[Node] Disconnected: coordinator") }
    #expect(logged.contains(reason(sequence)), "\(logged)")
    #expect(events.of("disconnected").contains { $0["system"] as? String == "beta" })
    return (events, tampering)
}

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

private func withProxiedCluster<T: Sendable>(
    direct: Bool, tamper: RecordingProxy.Tamper? = nil, proxyConnections: Int = 64, _ body: (ProxiedCluster) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-proxy-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    // Letters only, none of them a hex digit: no window of it can occur in a nonce or a MAC by chance.
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

    func retries(of input: Int) -> Int { of("retry").filter { $0["input"] as? Int == input }.count }

    /// Exit 0, each of `total` sectors completed exactly once, nothing failed, and the summary agrees.
    func expectEverySectorCompletedOnce(total: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "\(stderr)", sourceLocation: sourceLocation)
        let counts = completions.mapValues(\.count)
        #expect(counts == Dictionary(uniqueKeysWithValues: (0..<total).map { ($0, 1) }), "\(counts)", sourceLocation: sourceLocation)
        #expect(of("failed").isEmpty, sourceLocation: sourceLocation)
        let summary = of("summary").first
        #expect(summary?["completed"] as? Int == total && summary?["failed"] as? Int == 0, "\(String(describing: summary))",
                sourceLocation: sourceLocation)
    }
}

// MARK: - Reading the recording

/// The first 8 bytes of `bytes` that are also 8 consecutive bytes of `token`, if any.
private func firstWindow(of token: String, in bytes: [UInt8]) -> [UInt8]? {
    func word(_ window: ArraySlice<UInt8>) -> UInt64 { window.reduce(0) { $0 << 8 | UInt64($1) } }
    let secret = Array(token.utf8)
    guard secret.count >= 8, bytes.count >= 8 else { return nil }
    let windows = Set((0...(secret.count - 8)).map { word(secret[$0..<($0 + 8)]) })
    return (0...(bytes.count - 8)).first { windows.contains(word(bytes[$0..<($0 + 8)])) }.map { Array(bytes[$0..<($0 + 8)]) }
}

/// The handshake of docs/PROTOCOL.md: hello (auth, nonce, no token), challenge, auth (proof),
/// a welcome sealed with sequence 0; then every line of each direction sealed, in sequence.
private func expectDocumentedHandshake(_ recording: RecordingProxy.Recording) throws {
    let sent = recording.lines(.fromClient), received = recording.lines(.fromServer)
    try #require(sent.count >= 3 && received.count >= 3)
    let hello = try object(sent[0]), challenge = try object(received[0]), auth = try object(sent[1])
    #expect(Set(hello.keys) == ["type", "version", "name", "auth", "nonce"], "\(sent[0])")
    #expect(hello["type"] as? String == "hello" && hello["version"] as? Int == 1 && hello["auth"] as? String == "hmac-sha256")
    #expect(isHex(hello["nonce"], count: 64) && isHex(challenge["nonce"], count: 64), "nonces: \(sent[0]) \(received[0])")
    #expect(hello["nonce"] as? String != challenge["nonce"] as? String)
    #expect(Set(challenge.keys) == ["type", "nonce"] && challenge["type"] as? String == "challenge")
    #expect(Set(auth.keys) == ["type", "proof"] && auth["type"] as? String == "auth" && isHex(auth["proof"], count: 64))
    #expect(received[1].hasPrefix("0 ") && received[1].contains(#" {"type":"welcome""#), "\(received[1])")
    for (lines, first) in [(Array(sent.dropFirst(2)), sent.count - 2), (Array(received.dropFirst(1)), received.count - 1)] {
        #expect(lines.count == first)
        for (sequence, line) in lines.enumerated() {
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            #expect(parts.count == 3 && parts[0] == String(sequence) && isHex(parts[1], count: 32), "line \(sequence): \(line)")
            #expect((try? object(parts.last ?? "")) != nil, "line \(sequence): \(line)")
        }
    }
}

private func object(_ line: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
}

private func isHex(_ value: Any?, count: Int) -> Bool {
    guard let text = value as? String else { return false }
    return text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}

/// The JSON of a sealed line (`SEQ MAC JSON`, newline or not), as an object.
private func sealedObject(_ line: some Collection<UInt8>) -> [String: Any]? {
    let parts = String(decoding: line, as: UTF8.self).split(separator: "\n").first?.split(separator: " ", maxSplits: 2)
    guard let parts, parts.count == 3 else { return nil }
    return try? JSONSerialization.jsonObject(with: Data(parts[2].utf8)) as? [String: Any]
}

private func sequenceNumber(of line: [UInt8]) -> UInt64? {
    String(decoding: line, as: UTF8.self).split(separator: " ").first.flatMap { UInt64($0) }
}

/// Sector by task id, from the scan requests among `lines`.
private func inputsByTask(_ lines: [String]) -> [String: Int] {
    var inputs: [String: Int] = [:]
    for line in lines {
        guard let json = sealedObject(Array(line.utf8)), json["type"] as? String == "scan",
              let task = json["task"] as? [String: Any], let id = task["id"] as? String, let input = task["input"] as? Int else { continue }
        inputs[id] = input
    }
    return inputs
}

private func taskOfResult(_ line: String) -> String? {
    guard let json = sealedObject(Array(line.utf8.prefix { $0 != 0x0A })), json["type"] as? String == "result" else { return nil }
    return json["task"] as? String
}

private func resultText(of line: [UInt8]) -> String? { sealedObject(line)?["result"] as? String }

private func inputOfRequest(_ line: [UInt8]) -> Int? { (sealedObject(line)?["task"] as? [String: Any])?["input"] as? Int }
