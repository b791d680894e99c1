import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// What docs/PROTOCOL.md says of the points a client written from it alone had to guess
///, checked on a node in this process: the welcome's `idle`, whether the
/// 1 MiB limit counts the newline, the sealed `frame-too-large`, and a sealed line's `\r`.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ProtocolDocTests {
    let auth = AuthHandshakeTests()
    static let limit = 1 << 20

    /// A ping padded with spaces (JSON whitespace) to exactly `bytes` bytes, newline excluded.
    static func paddedPing(id: Int, bytes: Int) -> String {
        let ping = #"{"type":"ping","id":\#(id)}"#
        return ping + String(repeating: " ", count: bytes - ping.utf8.count)
    }

    @Test func theWelcomeWritesIdleAsADecimalNumber() async throws {
        try await auth.nodeTests.withNode { node in
            let welcome = try await onOwnThread(named: "test-doc") { () throws -> String in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"doc"}"#)
                return client.readLine() ?? ""
            }
            #expect(welcome.contains(#","idle":60.0"#), "\(welcome)")
        }
    }

    /// 1,048,576 bytes before the newline are served; one byte more is `frame-too-large`, then close.
    @Test func theLineLimitDoesNotCountTheNewline() async throws {
        try await auth.nodeTests.withNode { node in
            let (replies, closed) = try await onOwnThread(named: "test-doc") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                try client.send(#"{"type":"hello","version":1,"name":"doc"}"#)
                _ = client.readLine()
                try client.send(Self.paddedPing(id: 1, bytes: Self.limit))
                let pong = client.readLine() ?? "nothing"
                try client.send(Self.paddedPing(id: 2, bytes: Self.limit + 1))
                return ([pong] + client.readToEnd(silence: .seconds(5)), client.closed)
            }
            #expect(jsonFields(replies[0])?["type"] as? String == "pong", "\(replies[0].prefix(200))")
            #expect(replies.count == 2 && jsonFields(replies[1])?["code"] as? String == "frame-too-large", "\(replies.map { $0.prefix(200) })")
            #expect(closed)
        }
    }

    /// On a sealed connection the over-long line's `frame-too-large` is sealed like every line;
    /// a sealed line's MAC covers a `\r` before its newline (a `\r` it does not cover closes).
    @Test func aSealedConnectionSealsFrameTooLargeAndMACsTheCarriageReturn() async throws {
        try await auth.withTokenNode { node, log in
            let (lines, closed) = try await onOwnThread(named: "test-doc") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                let session = try auth.handshake(&client)
                let key = session.transcript.coordinatorToNode
                let ping = #"{"type":"ping","id":1}"#
                try client.send(HandTranscript.seal(ping + "\r", sequence: 0, key: key))  // the MAC covers the \r
                let pong = client.readLine() ?? "nothing"
                try client.send(String(repeating: "x", count: Self.limit + 1))
                return ([pong] + client.readToEnd(silence: .seconds(5)), client.closed)
            }
            let pong = unseal(lines[0])
            #expect(pong?.sequence == 1 && pong?.json.contains(#""pong""#) == true, "\(lines[0])")
            let refusal = lines.count == 2 ? unseal(lines[1]) : nil
            #expect(refusal?.sequence == 2, "\(lines.map { $0.prefix(200) })")
            #expect(refusal.flatMap { jsonFields($0.json)?["code"] as? String } == "frame-too-large")
            #expect(closed)

            let (after, closedToo) = try await onOwnThread(named: "test-doc") { () throws -> ([String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                let key = try auth.handshake(&client).transcript.coordinatorToNode
                try client.send(HandTranscript.seal(#"{"type":"ping","id":1}"#, sequence: 0, key: key) + "\r")  // not covered
                return (client.readToEnd(silence: .seconds(5)), client.closed)
            }
            #expect(after.isEmpty && closedToo, "\(after)")
            try await log.waitFor("a line whose MAC is wrong (sequence 0)")
        }
    }
}
