import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport

/// A coordinator written by hand, as a hostile one would be: the token handshake of
/// docs/PROTOCOL.md ("Authentication"), then every line it sends sealed and every line it
/// reads opened, with JSON the test writes itself (no encoder of the product's that might
/// refuse what a hostile peer would send). Blocking: use it on a thread of its own
/// (`onOwnThread`), from connect to close.
struct SealedLineClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let socket: Socket
    private var framer = LineFramer(maxLineBytes: 2 << 20)
    private var buffered: [[UInt8]] = []
    private var sending: LineSeal
    private var receiving: LineSeal
    /// The node's welcome, as a JSON object.
    private(set) var welcome: [String: Any] = [:]

    /// Connects to 127.0.0.1:`port` and proves `token`; throws unless the node answers with a
    /// welcome sealed by the token's key.
    init(port: Int, token: String) throws {
        socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
        let hello = Array(#"{"type":"hello","version":1,"name":"hostile","auth":"hmac-sha256","nonce":"\#(Secrets.hex(Secrets.randomBytes(32)))"}"#.utf8)
        try Self.send(hello + [0x0A], on: socket)
        // Plain lines until the welcome: these two are read with a seal that is never used.
        let key = HMACSHA256(key: Array(token.utf8))
        sending = LineSeal(key: key)
        receiving = LineSeal(key: key)
        guard let challenge = try nextRawLine().flatMap(Self.object), challenge["type"] as? String == "challenge",
              let nonceText = challenge["nonce"] as? String, let nonce = Secrets.bytes(fromHex: nonceText) else {
            throw Failure(description: "the node sent no challenge")
        }
        let transcript = AuthTranscript(hello: hello, nodeNonce: nonce)
        try Self.send(Array(#"{"type":"auth","proof":"\#(Secrets.hex(transcript.coordinatorProof(token: key)))"}"#.utf8) + [0x0A], on: socket)
        let keys = transcript.sessionKeys(token: key, as: .coordinator)
        sending = LineSeal(key: keys.sending)
        receiving = LineSeal(key: keys.receiving)
        guard let first = try receive(), first["type"] as? String == "welcome" else {
            throw Failure(description: "the node sent no sealed welcome")
        }
        welcome = first
    }

    /// Seals `json` (one message, no newline) and sends it.
    mutating func send(_ json: String) throws {
        try Self.send(sending.seal(Array((json + "\n").utf8)), on: socket)
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
        guard let line = try nextRawLine(silence: silence) else { return nil }
        switch receiving.open(line) {
        case .success(let json): return Self.object(json)
        case .failure(let rejection): throw Failure(description: "a line from the node did not open: \(rejection)")
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

    func close() { socket.close() }

    private mutating func nextRawLine(silence: Duration = .seconds(20)) throws -> [UInt8]? {
        socket.setReceiveTimeout(silence)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while buffered.isEmpty {
            let count: Int
            do { count = try socket.receive(into: chunk) } catch { return nil }
            guard count > 0 else { return nil }
            var lines: [[UInt8]] = []
            framer.feed(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { output in
                if case .line(let data) = output { lines.append(Array(data)) }
            }
            buffered += lines
        }
        return buffered.removeFirst()
    }

    private static func object(_ bytes: some Collection<UInt8>) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    private static func send(_ bytes: [UInt8], on socket: Socket) throws {
        var offset = 0
        while offset < bytes.count {
            offset += try bytes[offset...].withUnsafeBytes { try socket.send($0, wait: true) }
        }
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
