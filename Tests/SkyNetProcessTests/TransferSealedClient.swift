import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport

/// A coordinator written by hand, as a hostile one would be: the encrypted link of
/// docs/PROTOCOL.md (`EncryptedClient`), with JSON the test writes itself (no encoder of the
/// product's that might refuse what a hostile peer would send). Blocking: use it on a thread of
/// its own (`onOwnThread`), from connect to close.
struct SealedLineClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private var client: EncryptedClient
    /// The node's welcome, as a JSON object.
    let welcome: [String: Any]

    /// Connects to 127.0.0.1:`port` and does the handshake with `token`; throws unless the node
    /// answers with a welcome that opens with the token's keys.
    init(port: Int, token: String) throws {
        client = try EncryptedClient(port: port, token: token, name: "hostile")
        guard let welcome = Self.object(Array(client.welcome.utf8)), welcome["type"] as? String == "welcome" else {
            throw Failure(description: "the node sent no welcome: \(client.welcome)")
        }
        self.welcome = welcome
    }

    /// Sends `json` (one message, no newline) as the next frame.
    mutating func send(_ json: String) throws {
        try client.send(json)
    }

    /// Sends a file's bytes for request `id` as `data` lines of at most 256 KiB from `offset`,
    /// then (unless `digest` is nil) an `end` with it.
    mutating func sendFile(id: Int, _ bytes: [UInt8], offset: Int = 0, digest: String?) throws {
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 262_144)
            try send(#"{"type":"data","id":\#(id),"offset":\#(offset + start),"data":"\#(Data(bytes[start..<end]).base64EncodedString())"}"#)
            start = end
        }
        if let digest { try send(#"{"type":"end","id":\#(id),"sha256":"\#(digest)"}"#) }
    }

    /// The next message, opened and parsed; nil when the node closed or said nothing for `silence`.
    mutating func receive(silence: Duration = .seconds(20)) throws -> [String: Any]? {
        do {
            guard let message = try client.read(silence: silence) else { return nil }
            return Self.object(Array(message.utf8))
        } catch {
            throw Failure(description: "a frame from the node did not open: \(error)")
        }
    }

    /// Messages until one of `types` for request `id` came (returned last), or nothing more came.
    mutating func reply(to id: Int, types: Set<String> = ["result", "failure", "error", "stored"],
                        silence: Duration = .seconds(20)) throws -> [NodeMessage] {
        var messages: [NodeMessage] = []
        while let message = try receive(silence: silence) {
            messages.append(NodeMessage(message))
            if message["id"] as? Int == id, let type = message["type"] as? String, types.contains(type) { break }
        }
        return messages
    }

    func close() { client.close() }

    private static func object(_ bytes: some Collection<UInt8>) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }
}

/// The fields of a node's message a test reads, in a form that may cross threads.
struct NodeMessage: Sendable, CustomStringConvertible {
    let type: String?
    let id: Int?
    let code: String?
    let message: String?
    /// A `data` line's bytes, decoded.
    let data: Data?

    init(_ fields: [String: Any]) {
        type = fields["type"] as? String
        id = fields["id"] as? Int
        code = fields["code"] as? String
        message = fields["message"] as? String
        data = (fields["data"] as? String).flatMap { Data(base64Encoded: $0) }
    }

    var description: String {
        "\(type ?? "?") id \(id.map(String.init) ?? "-") \(code ?? "") \(message ?? "")\(data.map { " \($0.count) bytes" } ?? "")"
    }
}
