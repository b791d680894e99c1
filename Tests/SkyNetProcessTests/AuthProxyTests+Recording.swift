import Foundation
import Testing
@testable import SkyNetAuth
import SkyNetTestSupport

// Reading what the proxy recorded of an encrypted link: the token's traces, the plain text that
// must not be there, and the handshake lines and frames of docs/PROTOCOL.md.

/// The first 8 bytes of `bytes` that are also 8 consecutive bytes of `token`, if any.
func firstWindow(of token: String, in bytes: [UInt8]) -> [UInt8]? {
    func word(_ window: ArraySlice<UInt8>) -> UInt64 { window.reduce(0) { $0 << 8 | UInt64($1) } }
    let secret = Array(token.utf8)
    guard secret.count >= 8, bytes.count >= 8 else { return nil }
    let windows = Set((0...(secret.count - 8)).map { word(secret[$0..<($0 + 8)]) })
    return (0...(bytes.count - 8)).first { windows.contains(word(bytes[$0..<($0 + 8)])) }.map { Array(bytes[$0..<($0 + 8)]) }
}

/// Pieces of the JSON the link carries (keys, message types, the names in the hello and the
/// welcome) that `bytes` holds. Each is 6 bytes or more, so that ciphertext holds one by chance
/// about once in 2^48 places: `{"`, 2 bytes, would turn up in a few kilobytes of it now and then.
func plainTextMarks(in bytes: [UInt8]) -> [String] {
    let marks = [#""type":"#, #""id":"#, #""task""#, #""scan""#, #""result""#, #""welcome""#, "coordinator", "built-in simulated"]
    return marks.filter { mark in
        let needle = Array(mark.utf8)
        return bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

/// One connection of an encrypted link as docs/PROTOCOL.md has it, checked as it is read: the
/// coordinator's one clear line is a version 2 hello whose only fields are `type`, `version`
/// and `noise`, and whose `noise` opens with the token and holds the hello that counts; the
/// node's is a `handshake` of `type` and `noise`; every byte after each line is a frame, the
/// frames cover the rest of each stream exactly, and none shows any of the JSON inside.
struct EncryptedExchange {
    /// The frames of each direction after its line, each with its length.
    let sent: [[UInt8]], received: [[UInt8]]

    init(_ recording: RecordingProxy.Recording, token: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (hello, sent) = try Self.split(recording, .fromClient, sourceLocation: sourceLocation)
        let (answer, received) = try Self.split(recording, .fromServer, sourceLocation: sourceLocation)
        self.sent = sent
        self.received = received

        let helloFields = try Self.object(hello)
        #expect(Set(helloFields.keys) == ["type", "version", "noise"], "\(hello)", sourceLocation: sourceLocation)
        #expect(helloFields["type"] as? String == "hello" && helloFields["version"] as? Int == 2, "\(hello)", sourceLocation: sourceLocation)
        let first = try #require(Self.base64(helloFields["noise"]), "\(hello)", sourceLocation: sourceLocation)
        #expect(first.count >= 48, "\(first.count) bytes", sourceLocation: sourceLocation)
        // The node's side of the handshake, made here with the token: only that key opens it.
        var responder = LinkKey(token: Array(token.utf8)).responder()
        let inner = try #require(try? responder.readMessage(first), "the hello's noise does not open with the token", sourceLocation: sourceLocation)
        let innerFields = try Self.object(String(decoding: inner, as: UTF8.self))
        #expect(innerFields["type"] as? String == "hello" && innerFields["version"] as? Int == 2 && innerFields["name"] as? String == "coordinator",
                "\(innerFields)", sourceLocation: sourceLocation)
        #expect(Set(innerFields.keys).isSubset(of: ["type", "version", "name", "actors", "files"]), "\(innerFields)", sourceLocation: sourceLocation)

        let answerFields = try Self.object(answer)
        #expect(Set(answerFields.keys) == ["type", "noise"] && answerFields["type"] as? String == "handshake", "\(answer)",
                sourceLocation: sourceLocation)
        let second = try #require(Self.base64(answerFields["noise"]), "\(answer)", sourceLocation: sourceLocation)
        #expect(second.count >= 48, "\(second.count) bytes", sourceLocation: sourceLocation)
        #expect(second.prefix(32) != first.prefix(32), "the node's ephemeral key is its own", sourceLocation: sourceLocation)
    }

    /// `direction`'s first line and its frames; requires that nothing else is there, that
    /// every byte belongs to one of them, and that the frames show no JSON.
    private static func split(_ recording: RecordingProxy.Recording, _ direction: RecordingProxy.Direction,
                              sourceLocation: SourceLocation) throws -> (line: String, frames: [[UInt8]]) {
        let (units, unfinished) = recording.units(direction)
        guard case .line(let line)? = units.first else {
            throw CheckFailed(description: "\(direction) does not begin with a line: \(units.prefix(1))")
        }
        let frames = units.dropFirst().compactMap { unit -> [UInt8]? in if case .frame(let bytes) = unit { bytes } else { nil } }
        #expect(frames.count == units.count - 1 && unfinished.isEmpty,
                "\(direction): \(units.count - 1 - frames.count) stretches that are no frame, \(unfinished.count) bytes of an unfinished one",
                sourceLocation: sourceLocation)
        #expect(frames.map(\.count).reduce(line.count, +) == recording.bytes(direction).count, sourceLocation: sourceLocation)
        let marks = plainTextMarks(in: Array(recording.bytes(direction).dropFirst(line.count)))
        #expect(marks.isEmpty, "\(direction) after its line shows \(marks)", sourceLocation: sourceLocation)
        return (String(decoding: line.dropLast(), as: UTF8.self), frames)
    }

    private static func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
    }

    /// The bytes of `value` if it is standard base64 with padding (encoding them again gives it back).
    private static func base64(_ value: Any?) -> [UInt8]? {
        guard let text = value as? String, let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        return Array(data)
    }
}
