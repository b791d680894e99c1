import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// Files version 2 (docs/PROTOCOL.md, "Files"): granted only where the link guarantees
/// integrity itself. On an encrypted link a chunk is a binary message and no digest travels;
/// on a plain TCP link the node keeps version 1, digests and all. Every message here is built
/// by hand from the document.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeFilesVersion2Tests {
    static let token = "a token of at least sixteen bytes"

    func options(_ sandbox: WorkDirSandbox, token: String?) throws -> Node.Options {
        var options = NodeHarness().options(token: token)
        options.workDir = sandbox.path
        try options.jobs.register("t", CommandJob(name: "t", command: try CommandTemplate("cp {} {}.out")))
        return options
    }

    /// `0x00 ‖ id (u64 BE) ‖ file (u8, 0xFF none) ‖ offset (u64 BE) ‖ bytes`.
    static func binaryData(id: UInt64, file: UInt8 = 0xFF, offset: UInt64, _ bytes: ArraySlice<UInt8>) -> [UInt8] {
        [0] + withUnsafeBytes(of: id.bigEndian, Array.init) + [file] + withUnsafeBytes(of: offset.bigEndian, Array.init) + bytes
    }

    static let transfer = #"{"type":"transfer","id":7,"job":"t","task":{"id":"9B2F1C3E-0000-4000-8000-000000000007","sector":7,"input":"a.bin"},"#
        + #""file":{"size":SIZE,"mode":420,"mtime_ns":1700000000000000000},"returns":["a.bin.out"],"cleanup":true}"#

    @Test func anEncryptedLinkMovesFilesAsBinaryMessagesWithoutADigest() async throws {
        var random = SeededRandom(seed: 34)
        // Over one chunk, and ending on a newline byte: a binary message keeps every byte.
        let bytes = (0..<(maxChunkBytes + 1000)).map { _ in UInt8.random(in: 0...255, using: &random) } + [0x0A]
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox, token: Self.token)) { node in
                let port = node.port
                let (welcomeLine, messages) = try await onOwnThread(named: "test-client") { () throws -> (String, [[UInt8]]) in
                    var client = try EncryptedClient(port: port, token: Self.token, extraHello: #""files":2"#)
                    defer { client.close() }
                    try client.send(Self.transfer.replacingOccurrences(of: "SIZE", with: "\(bytes.count)"))
                    var offset = 0
                    while offset < bytes.count {
                        let end = min(bytes.count, offset + maxChunkBytes)
                        try client.sendRaw(client.frame(bytes: Self.binaryData(id: 7, offset: UInt64(offset), bytes[offset..<end])))
                        offset = end
                    }
                    try client.send(#"{"type":"end","id":7}"#)
                    var messages: [[UInt8]] = []
                    while let message = try client.readMessage(silence: .seconds(60)) {
                        messages.append(message)
                        if jsonFields(String(decoding: message, as: UTF8.self))?["type"] as? String == "result" { break }
                    }
                    return (client.welcome, messages)
                }
                let welcome = jsonFields(welcomeLine) ?? [:]
                #expect((welcome["files"] as? [String: Any])?["version"] as? Int == 2, "\(welcome)")
                let binary = messages.filter { $0.first == 0 }
                let json = messages.filter { $0.first != 0 }.compactMap { jsonFields(String(decoding: $0, as: UTF8.self)) }
                #expect(json.map { $0["type"] as? String } == ["return", "end", "result"])
                #expect(json.allSatisfy { $0["sha256"] == nil }, "no digest on version 2")
                // The returned copy, put together from its binary chunks at their offsets.
                var returned: [UInt8] = []
                for message in binary {
                    #expect(message.count > 18)
                    let id = message[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
                    let offset = message[10..<18].reduce(0) { $0 << 8 | UInt64($1) }
                    #expect(id == 7 && message[9] == 0 && offset == UInt64(returned.count))
                    returned += message[18...]
                }
                #expect(returned == bytes)
            }
        }
    }

    @Test func aPlainLinkKeepsVersion1AndRefusesABinaryLine() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox, token: nil)) { node in
                let port = node.port
                let (welcome, reply) = try await onOwnThread(named: "test-client") { () throws -> (String, String) in
                    var client = try RawLines(port: port)
                    defer { client.close() }
                    try client.send(#"{"type":"hello","version":1,"name":"raw","files":2}"#)
                    let welcome = client.readLine() ?? ""
                    try client.send(bytes: Self.binaryData(id: 3, offset: 0, [1, 2, 3]) + [0x0A])
                    return (welcome, client.readLine(silence: .seconds(60)) ?? "")
                }
                #expect((jsonFields(welcome)?["files"] as? [String: Any])?["version"] as? Int == 1, "\(welcome)")
                #expect(jsonFields(reply)?["code"] as? String == "bad-request", "\(reply)")
            }
        }
    }

    /// A wrong field of the hello inside the handshake is named, as in a clear hello.
    @Test func aBadFilesFieldInsideTheHandshakeIsNamed() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox, token: Self.token)) { node in
                let port = node.port
                let refusal = try await onOwnThread(named: "test-client") { () -> String in
                    do {
                        let client = try EncryptedClient(port: port, token: Self.token, extraHello: #""files":0"#)
                        client.close()
                        return "welcomed"
                    } catch let refused as EncryptedClient.Refused {
                        return refused.line
                    }
                }
                #expect(jsonFields(refusal)?["code"] as? String == "bad-request", "\(refusal)")
                #expect((jsonFields(refusal)?["message"] as? String)?.contains("\"files\"") == true, "\(refusal)")
            }
        }
    }

    @Test func onVersion1AnEndWithoutItsDigestIsABadFile() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox, token: Self.token)) { node in
                let port = node.port
                let line = try await onOwnThread(named: "test-client") { () throws -> String in
                    // No `files` in the hello: version 1, though the link is encrypted.
                    var client = try EncryptedClient(port: port, token: Self.token)
                    defer { client.close() }
                    try client.send(Self.transfer.replacingOccurrences(of: "SIZE", with: "3"))
                    try client.send(#"{"type":"data","id":7,"offset":0,"data":"AQID"}"#)
                    try client.send(#"{"type":"end","id":7}"#)
                    return try client.read(silence: .seconds(60)) ?? ""
                }
                let reply = jsonFields(line) ?? [:]
                #expect(reply["type"] as? String == "failure" && reply["code"] as? String == "bad-file", "\(reply)")
                #expect((reply["message"] as? String)?.hasSuffix("its end carries no SHA-256") == true, "\(reply)")
            }
        }
    }

    /// 10,000 frames that open (the token's keys) but hold random bytes, half of them binary
    /// messages with random headers, crash nothing: each is answered or ignored, and the link
    /// still answers a ping after them.
    @Test func tenThousandRandomMessagesOnAnEncryptedLinkCrashNothing() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox, token: Self.token)) { node in
                let port = node.port
                let pong = try await onOwnThread(named: "test-client") { () throws -> String in
                    var random = SeededRandom(seed: 10_000)
                    var client = try EncryptedClient(port: port, token: Self.token, extraHello: #""files":2"#)
                    defer { client.close() }
                    for round in 0..<10 {
                        for _ in 0..<1_000 {
                            var message = (0..<Int.random(in: 1...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                            if Bool.random(using: &random) { message[0] = 0 }
                            try client.sendRaw(client.frame(bytes: message))
                        }
                        // The errors are read as they come: a client that never reads is closed.
                        while try client.readMessage(silence: .milliseconds(round == 9 ? 500 : 100)) != nil {}
                    }
                    try client.send(#"{"type":"ping","id":1}"#)
                    while let message = try client.read(silence: .seconds(30)) {
                        if jsonFields(message)?["type"] as? String == "pong" { return message }
                    }
                    return ""
                }
                #expect(jsonFields(pong)?["id"] as? Int == 1, "\(pong)")
            }
        }
    }
}
