import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire
import SkyNetTestSupport

/// Lines for fuzzing: good messages, mutated ones and random bytes, never holding a newline.
struct FuzzLines {
    var random: SeededRandom
    static let seeds = [
        #"{"type":"ping","id":1}"#,
        #"{"type":"scan","id":2,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":3,"duration":0}}"#,
        #"{"type":"cancel","id":3}"#,
        #"{"type":"hello","version":1,"name":"again"}"#,
        #"{"type":"error","code":"x"}"#,
        #"["type","ping"]"#,
    ]
    static let tokens = ["{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e999", "-0", "\\u0000", "\\ud800",
                         "\\", "9223372036854775808", "\"id\":", "\"type\":\"scan\"", "\u{00}", "é", "\u{7F}"]

    mutating func next() -> [UInt8] {
        var bytes: [UInt8]
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        default:
            bytes = Array(Self.seeds.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &random) { mutate(&bytes) }
        }
        return bytes.map { $0 == 10 ? 32 : $0 }
    }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &random)
        case 1: bytes.insert(contentsOf: Self.tokens.randomElement(using: &random)!.utf8, at: position)
        case 2 where !bytes.isEmpty: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...8, using: &random)))
        case 3: bytes = Array(bytes[..<position])
        default: bytes.insert(contentsOf: bytes[position...].prefix(16), at: position)
        }
    }
}

/// Resident memory of a process, from /proc, in KiB.
func residentKiB(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
}

extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct AbuseTests {
        /// Thousands of seeded random and mutated lines, each sent in random pieces: the node
        /// answers every line (but a valid cancel, which has no reply) and stays up.
        @Test func fuzzedLinesAreEachAnsweredAndTheNodeStaysUp() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let node = try #require(cluster.node("beta"))
                let client = try await RawLineClient(port: node.port, first: #"{"type":"hello","version":1}"#)
                _ = try await client.receive()
                let seed = FuzzSeed(20261121)
                var fuzz = FuzzLines(random: seed.random)
                var answered = 0, silent = 0
                let startKiB = residentKiB(of: node.processIdentifier) ?? 0
                for _ in 0..<3000 {
                    let line = fuzz.next()
                    // The decoder is the oracle only for whether a reply is due; scans it would
                    // accept with a long duration are left out so the node never waits on them.
                    let request = try? Request.decode(Data(line))
                    if case .scan(_, let task, _)? = request, task.duration > 0.01 { continue }
                    var bytes = line + [10]
                    while !bytes.isEmpty {
                        let piece = Int.random(in: 1...bytes.count, using: &fuzz.random)
                        try client.sendBytes(Array(bytes.prefix(piece)))
                        bytes.removeFirst(piece)
                    }
                    // A cancel has no reply, nor has an answer (`returned`, `threw`, `error`): the
                    // node takes it for the answer to a call of its own, and drops one to none.
                    switch request {
                    case .cancel?, .answer?:
                        silent += 1
                        continue
                    default:
                        break
                    }
                    let reply = try #require(try await client.receive(), "\(seed): no reply to \(String(decoding: line, as: UTF8.self))")
                    #expect(["pong", "result", "failure", "error"].contains(reply["type"] as? String ?? ""), "\(seed): \(String(decoding: line, as: UTF8.self))")
                    answered += 1
                }
                let pong = try #require(try await client.exchange(#"{"type":"ping","id":424242}"#))
                #expect(pong["id"] as? Int == 424242, "\(seed)")
                #expect(answered > 2500, "\(seed)")
                let endKiB = residentKiB(of: node.processIdentifier) ?? 0
                print("fuzz: \(answered) lines answered, \(silent) unanswered (cancels and answers); node RSS \(startKiB) KiB -> \(endKiB) KiB")
                #expect(endKiB < 2 * startKiB + 16 * 1024, "\(seed)")
            }
        }

        static let token = "letmein-letmein-letmein"

        @Test func aNodeUnderAbuseStaysUpBoundedAndServesAGoodClientAfterwards() async throws {
            try await withCluster(nodes: 0) { cluster in
                let node = try await NodeProcess.start(
                    executable: skynetBinary, name: "target", arguments: ["--failing-every", "0"],
                    environment: ProcessInfo.processInfo.environment.merging(["SKYNET_TOKEN": Self.token]) { $1 })
                do {
                    try await abuse(node)
                } catch {
                    await node.stop()
                    throw error
                }
                await node.stop()
            }
        }

        private func abuse(_ node: NodeProcess) async throws {
            let pid = node.processIdentifier
            let startKiB = try #require(residentKiB(of: pid))

            // The token in plain text (protocol version 1's way), none, and the wrong one in a
            // Noise handshake: each refused and closed.
            for (hello, code) in [(#"{"type":"hello","version":1,"token":"guess"}"#, "unsupported-version"),
                                  (#"{"type":"hello","version":1}"#, "unauthorized")] {
                let client = try await RawLineClient(port: node.port, first: hello)
                let refusal = try #require(try await client.receive())
                #expect(refusal["code"] as? String == code, "\(hello): \(refusal)")
                #expect(try await client.receive() == nil)
            }
            let wrong = try await onOwnThread(named: "test-wrong-token") { () throws -> String in
                do {
                    _ = try EncryptedClient(port: node.port, token: "not-the-token-not-the-token")
                    return "welcomed"
                } catch let refused as EncryptedClient.Refused {
                    return refused.line
                }
            }
            #expect(jsonFields(wrong)?["code"] as? String == "unauthorized", "\(wrong)")

            // 1,000 bad messages on one encrypted link: each answered, the link stays usable.
            try await onOwnThread(named: "test-bad-messages") {
                var client = try EncryptedClient(port: node.port, token: Self.token)
                defer { client.close() }
                var random = SeededRandom(seed: 7)
                for index in 0..<1000 {
                    let bad = [#"{"type":"scan","id":\#(index)}"#, "garbage \(index)", #"{"type":"teleport","id":\#(index)}"#,
                               #"{"type":"scan","id":\#(index),"task":{"id":"x","input":1}}"#, "{}"].randomElement(using: &random) ?? "{}"
                    try client.send(bad)
                    let reply = try client.read().flatMap(jsonFields)
                    try check(["bad-request", "unknown-type"].contains(reply?["code"] as? String ?? ""), "\(bad): \(String(describing: reply))")
                }
                try client.send(#"{"type":"ping","id":1}"#)
                try check(try client.read().flatMap(jsonFields)?["type"] as? String == "pong", "no pong after the bad messages")
            }

            // 8 MiB without a newline as the first line: refused with frame-too-large, closed.
            let flood = try await RawLineClient(port: node.port)
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
            let floodSocket = flood.socket
            _ = try? await onOwnThread(named: "flood") {
                for _ in 0..<8 { try floodSocket.sendAll(chunk) }
            }
            let refusal = try #require(try await flood.receive())
            #expect(refusal["code"] as? String == "frame-too-large")
            // A frame that says 8 MiB on an encrypted link: the link ends before its bytes are read.
            let cut = try await onOwnThread(named: "test-big-frame") { () throws -> Bool in
                var client = try EncryptedClient(port: node.port, token: Self.token)
                defer { client.close() }
                try client.sendRaw(withUnsafeBytes(of: UInt32(8 << 20).bigEndian) { Array($0) } + Array(repeating: 0x61, count: 64))
                return try client.read() == nil && client.closed
            }
            #expect(cut, "a frame over the limit ends the link, unanswered")

            // 200 half-open, abandoned connections: some silent, some with half a hello.
            var abandoned: [RawLineClient] = []
            for index in 0..<200 {
                let idle = try await RawLineClient(port: node.port)
                if index.isMultiple(of: 2) { try idle.sendBytes(Array(#"{"type":"hel"#.utf8)) }
                abandoned.append(idle)
            }

            // A good client is still served while they hang around.
            let result = try await onOwnThread(named: "test-good-client") { () throws -> String? in
                var good = try EncryptedClient(port: node.port, token: Self.token)
                defer { good.close() }
                try check(jsonFields(good.welcome)?["type"] as? String == "welcome", good.welcome)
                try good.send(#"{"type":"scan","id":9,"task":{"id":"\#(UUID().uuidString)","input":9,"duration":0}}"#)
                return try good.read().flatMap(jsonFields)?["result"] as? String
            }
            #expect(result == "9")

            // Connections that never finish their hello are closed after 10 s.
            let first = abandoned[0]
            let closed = try await withTimeout(.seconds(20)) { try await first.receive() == nil }
            #expect(closed)

            let endKiB = try #require(residentKiB(of: pid))
            print("abuse: node RSS \(startKiB) KiB at start, \(endKiB) KiB after the abuse")
            // Bounded, not grown with the abuse: 200 open connections cost their threads, no more.
        // (Relative to the start, so that a ThreadSanitizer build, several times larger, holds too.)
        #expect(endKiB < 3 * startKiB + 32 * 1024)
            #expect(kill(pid, 0) == 0)  // still running
        }
    }
}

extension RawLineClient {
    func sendBytes(_ bytes: [UInt8]) throws {
        try socket.sendAll(bytes)
    }
}

extension Socket {
    func sendAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            offset += try send(Array(bytes[offset...]), wait: true)
        }
    }
}
