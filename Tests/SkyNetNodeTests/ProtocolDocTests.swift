import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// What docs/PROTOCOL.md says of the points a client written from it alone had to guess,
/// checked on a node in this process: the welcome's `idle`, whether the 1 MiB limit counts the
/// newline, and what it counts on an encrypted link.
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

    /// On an encrypted link the limit counts a frame's message (its length and tag are not
    /// counted): a 1 MiB message is served; a frame whose length says more ends the link at
    /// once, before its bytes are read, with nothing answered.
    @Test func anEncryptedLinkServesAFullMessageAndEndsAtALongerFrame() async throws {
        try await auth.withTokenNode { node, log in
            let (messages, closed) = try await onOwnThread(named: "test-doc") { () throws -> ([String], Bool) in
                var client = try EncryptedClient(port: node.port, token: AuthHandshakeTests.token)
                defer { client.close() }
                try client.send(Self.paddedPing(id: 1, bytes: Self.limit))
                let pong = try client.read() ?? "nothing"
                let header = withUnsafeBytes(of: UInt32(Self.limit + 16 + 1).bigEndian) { Array($0) }
                try client.sendRaw(header + [UInt8](repeating: 0, count: 64))
                return ([pong] + (try client.readToEnd(silence: .seconds(5))), client.closed)
            }
            #expect(messages.count == 1 && jsonFields(messages[0])?["type"] as? String == "pong", "\(messages.map { $0.prefix(200) })")
            #expect(closed)
            try await log.waitFor("a frame of \(Self.limit + 17) bytes, over the limit of \(Self.limit) bytes of message and a 16-byte tag")
        }
    }
}
