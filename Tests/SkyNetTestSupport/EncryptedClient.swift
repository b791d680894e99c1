import Foundation
@testable import SkyNetAuth
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A client of an encrypted link, blocking (use it on a thread of its own): the version 2
/// handshake and the frames as docs/PROTOCOL.md writes them, each frame built and taken apart
/// here byte by byte, with nothing of the library but the Noise handshake and the AEAD. So a
/// test that uses it checks the node's framing against the document, not against itself.
package struct EncryptedClient {
    package let socket: Socket
    /// Bytes read and not yet used.
    private var buffer: [UInt8] = []
    private var sending: NoiseCipher
    private var receiving: NoiseCipher
    /// The node's welcome (the handshake's payload), as JSON.
    package let welcome: String
    /// Whether the node closed (or reset) the connection.
    package private(set) var closed = false

    /// What the node said instead of the handshake's answer (a JSON error line), or that the
    /// answer did not open.
    package struct Refused: Error, CustomStringConvertible {
        package let line: String
        package var description: String { "the handshake was refused: \(line)" }
    }

    /// Connects to 127.0.0.1:`port` and does the handshake with `token`; the hello inside
    /// says `name` (and `extraHello` fields, JSON text after a comma, when given).
    package init(port: Int, token: String, name: String = "hand", extraHello: String? = nil) throws {
        try self.init(socket: try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5)),
                      token: token, name: name, extraHello: extraHello)
    }

    package init(socket: Socket, token: String, name: String = "hand", extraHello: String? = nil) throws {
        self.socket = socket
        var initiator = LinkKey(token: Array(token.utf8)).initiator()
        let inner = #"{"type":"hello","version":2,"name":"\#(name)"\#(extraHello.map { "," + $0 } ?? "")}"#
        let first = try initiator.writeMessage(payload: Array(inner.utf8))
        let hello = #"{"type":"hello","version":2,"noise":"\#(first.base64)"}"#
        try Self.sendAll(socket, Array((hello + "\n").utf8))
        var reader = RawBytes()
        let line = reader.readLine(socket) ?? ""
        guard let fields = jsonFields(line), fields["type"] as? String == "handshake",
              let answer = (fields["noise"] as? String).flatMap({ Data(base64Encoded: $0) }) else { throw Refused(line: line) }
        guard let payload = try? initiator.readMessage(Array(answer)), let ciphers = try? initiator.split() else {
            throw Refused(line: "an answer that does not open: \(line)")
        }
        welcome = String(decoding: payload, as: UTF8.self)
        (sending, receiving) = ciphers
        buffer = reader.rest
        closed = reader.closed
    }

    /// The next frame of `json`: LENGTH (4 bytes, big-endian) ‖ ciphertext ‖ tag. The counter
    /// moves: a frame made and not sent makes every later one fail.
    package mutating func frame(_ json: String) -> [UInt8] {
        frame(bytes: Array(json.utf8))
    }

    /// The next frame of a message of any bytes (a binary `data` message).
    package mutating func frame(bytes message: [UInt8]) -> [UInt8] {
        let sealed = sending.seal(message)
        return withUnsafeBytes(of: UInt32(sealed.count).bigEndian) { Array($0) } + sealed
    }

    package mutating func send(_ json: String) throws { try sendRaw(frame(json)) }

    /// Sends bytes as they are (a frame made earlier, one changed, garbage).
    package func sendRaw(_ bytes: [UInt8]) throws { try Self.sendAll(socket, bytes) }

    /// The next message's JSON; nil when the node closed, or nothing came for `silence`.
    /// Throws when a frame does not open.
    package mutating func read(silence: Duration = .seconds(10)) throws -> String? {
        try readMessage(silence: silence).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The next message's bytes, as `read`.
    package mutating func readMessage(silence: Duration = .seconds(10)) throws -> [UInt8]? {
        while true {
            if buffer.count >= 4 {
                let length = buffer.prefix(4).reduce(0) { $0 << 8 | Int($1) }
                if buffer.count >= 4 + length {
                    let sealed = Array(buffer[4..<(4 + length)])
                    buffer.removeFirst(4 + length)
                    guard let message = receiving.open(sealed) else { throw CheckFailed(description: "a frame from the node does not open") }
                    return message
                }
            }
            guard !closed, receive(silence: silence) else { return nil }
        }
    }

    /// Every message until the node closes (`closed` stays false if it did not within
    /// `silence` of the last bytes).
    package mutating func readToEnd(silence: Duration = .seconds(10)) throws -> [String] {
        var messages: [String] = []
        while let message = try read(silence: silence) { messages.append(message) }
        return messages
    }

    private mutating func receive(silence: Duration) -> Bool {
        socket.setReceiveTimeout(silence)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count: Int
        do {
            count = try chunk.withUnsafeMutableBytes { try socket.receive(into: $0) }
        } catch {
            if let error = error as? SocketError, error.code == EAGAIN || error.code == EWOULDBLOCK { return false }
            closed = true
            return false
        }
        if count == 0 {
            closed = true
            return false
        }
        buffer += chunk.prefix(count)
        return true
    }

    package func close() { socket.close() }

    static func sendAll(_ socket: Socket, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            offset += try bytes[offset...].withUnsafeBytes { try socket.send($0, wait: true) }
        }
    }
}

/// One line read byte by byte, so that nothing after it is framed as a line.
private struct RawBytes {
    var rest: [UInt8] = []
    var closed = false

    mutating func readLine(_ socket: Socket) -> String? {
        socket.setReceiveTimeout(.seconds(10))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let newline = rest.firstIndex(of: 0x0A) {
                let line = String(decoding: rest[..<newline], as: UTF8.self)
                rest.removeFirst(newline + 1)
                return line
            }
            guard let count = try? chunk.withUnsafeMutableBytes({ try socket.receive(into: $0) }), count > 0 else {
                closed = true
                return nil
            }
            rest += chunk.prefix(count)
        }
    }
}

extension Array where Element == UInt8 {
    /// Standard base64, with padding (Foundation's, not the library's).
    package var base64: String { Data(self).base64EncodedString() }
}
