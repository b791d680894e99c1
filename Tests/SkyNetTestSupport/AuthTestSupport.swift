import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire

/// Log lines (of a node, or of a coordinator's links) collected for a test to read and await.
package final class LogLines: Sendable {
    package init() {}
    private let lines = Watched<[String]>([])

    package func append(_ line: String) { lines.update { $0.append(line) } }
    package var all: [String] { lines.value }

    package func matching(_ text: String) -> [String] { all.filter { $0.contains(text) } }

    /// Waits until `count` lines containing `text` were logged; returns them. Throws after `limit`.
    @discardableResult
    package func waitFor(_ text: String, count: Int = 1, upTo limit: Duration = .seconds(30)) async throws -> [String] {
        try await lines.wait(upTo: limit) { lines in lines.count { $0.contains(text) } >= count }
        return matching(text)
    }
}

/// The token handshake computed by hand, as docs/PROTOCOL.md describes it, with nothing of the
/// library but HMAC-SHA256 and hex: so a test that uses it checks the library against the
/// document, not against itself.
package struct HandTranscript {
    package let token: String
    /// The hello line as sent, without its newline.
    package let hello: [UInt8]
    package let nodeNonce: [UInt8]

    package init(token: String, hello: [UInt8], nodeNonce: [UInt8]) {
        self.token = token
        self.hello = hello
        self.nodeNonce = nodeNonce
    }

    /// T = hello ‖ "\n" ‖ the node's nonce in lowercase hex.
    package var bytes: [UInt8] { hello + [0x0A] + Array(Secrets.hex(nodeNonce).utf8) }

    /// HMAC-SHA256(token, label ‖ "\n" ‖ T).
    package func mac(_ label: String) -> [UInt8] {
        HMACSHA256(key: Array(token.utf8)).tag(Array(label.utf8) + [0x0A] + bytes)
    }

    package var proof: [UInt8] { mac("skynet coordinator proof") }
    package var coordinatorToNode: [UInt8] { mac("skynet key coordinator to node") }
    package var nodeToCoordinator: [UInt8] { mac("skynet key node to coordinator") }

    /// The MAC of an authenticated line: the first 16 bytes of HMAC(key, SEQ big-endian ‖ JSON), in hex.
    package static func lineMAC(_ json: String, sequence: UInt64, key: [UInt8]) -> String {
        let message = withUnsafeBytes(of: sequence.bigEndian) { Array($0) } + Array(json.utf8)
        return Secrets.hex(HMACSHA256(key: key).tag(message).prefix(16))
    }

    /// `SEQ SP MAC SP JSON`.
    package static func seal(_ json: String, sequence: UInt64, key: [UInt8]) -> String {
        "\(sequence) \(lineMAC(json, sequence: sequence, key: key)) \(json)"
    }

    /// A hello asking for the handshake, with `nonce`.
    package static func hello(name: String = "hand", nonce: [UInt8]) -> String {
        #"{"type":"hello","version":1,"name":"\#(name)","auth":"hmac-sha256","nonce":"\#(Secrets.hex(nonce))"}"#
    }
}

/// A client (or a fake node's side of a connection) that speaks lines over a raw socket, blocking:
/// use it on a thread of its own (`onOwnThread`, `startThread`). It keeps what it read past a
/// line for the next one.
package struct RawLines: Sendable {
    package let socket: Socket
    private var framer = LineFramer(maxLineBytes: 2 << 20)
    private var buffered: [String] = []
    /// Whether the peer closed (or reset) the connection.
    package private(set) var closed = false

    package init(socket: Socket) {
        self.socket = socket
    }

    /// Connects to 127.0.0.1:`port`.
    package init(port: Int) throws {
        self.init(socket: try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5)))
    }

    /// Sends `line` and a newline, all of it.
    package func send(_ line: String) throws { try send(bytes: Array((line + "\n").utf8)) }

    package func send(bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            offset += try bytes[offset...].withUnsafeBytes { try socket.send($0, wait: true) }
        }
    }

    /// The next line, or nil if the peer closed or nothing came for `silence`.
    package mutating func readLine(silence: Duration = .seconds(10)) -> String? {
        while buffered.isEmpty, !closed {
            guard receive(silence: silence) else { return nil }
        }
        return buffered.isEmpty ? nil : buffered.removeFirst()
    }

    /// Every line until the peer closes; `closed` stays false if it did not within `silence`
    /// of the last bytes.
    package mutating func readToEnd(silence: Duration = .seconds(10)) -> [String] {
        while !closed, receive(silence: silence) {}
        defer { buffered = [] }
        return buffered
    }

    /// Reads once; false when nothing came within `silence` (or the peer closed).
    private mutating func receive(silence: Duration) -> Bool {
        socket.setReceiveTimeout(silence)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        let count: Int
        do {
            count = try socket.receive(into: chunk)
        } catch {
            if error.code != EAGAIN && error.code != EWOULDBLOCK { closed = true }
            return false
        }
        if count == 0 {
            closed = true
            return false
        }
        var lines: [String] = []
        framer.feed(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { output in
            if case .line(let data) = output { lines.append(String(decoding: data, as: UTF8.self)) }
        }
        buffered += lines
        return true
    }

    package func close() { socket.close() }
}

/// The fields of a JSON line (plain, or the JSON of a sealed one), or nil.
package func jsonFields(_ line: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
}

/// A sealed line split into its sequence number, MAC and JSON, or nil if it is not one.
package func unseal(_ line: String) -> (sequence: UInt64, mac: String, json: String)? {
    let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, let sequence = UInt64(parts[0]), parts[1].count == 32 else { return nil }
    return (sequence, String(parts[1]), String(parts[2]))
}

/// A node that pretends to know the token, written for the tests (127.0.0.1, port 0): it answers
/// each hello as its `Script` says, then records every line the client sends until it closes.
package final class ImpostorNode: Sendable {
    package enum Script: String, Sendable, CaseIterable, CustomStringConvertible {
        /// A welcome in plain, no challenge: a node without the token (or one that hopes so).
        case plainWelcome
        /// A challenge, and after the proof a welcome in plain.
        case challengeThenPlainWelcome
        /// A challenge, and after the proof a welcome behind a made-up sequence number and MAC.
        case challengeThenMadeUpSeal
        /// A challenge, and after the proof a welcome sealed with the keys of another token.
        case challengeThenAnotherTokensSeal

        package var description: String { rawValue }
    }

    /// What one client sent, once it closed the connection.
    package struct Conversation: Sendable {
        package let lines: [String]
        package let closedByClient: Bool
    }

    package let port: Int
    private let listener: Listener
    private let conversations = Watched<[Conversation]>([])

    private init(listener: Listener) {
        self.listener = listener
        port = listener.port
    }

    package static func start(_ script: Script) async throws -> ImpostorNode {
        let node = ImpostorNode(listener: try await Listener.bind(host: "127.0.0.1", port: 0))
        try node.listener.start { socket, _ in
            startThread(named: "test-impostor") { node.converse(RawLines(socket: socket), script) }
        }
        return node
    }

    package func stop() { listener.stop() }

    /// The conversations of clients that have closed, in order.
    package var finished: [Conversation] { conversations.value }

    /// Waits until `count` clients have closed their connection; returns their conversations.
    package func waitForConversations(_ count: Int, upTo limit: Duration = .seconds(30)) async throws -> [Conversation] {
        try await conversations.wait(upTo: limit) { $0.count >= count }
        return finished
    }

    private func converse(_ client: RawLines, _ script: Script) {
        var client = client
        var lines: [String] = []
        defer {
            let conversation = Conversation(lines: lines + client.readToEnd(silence: .seconds(10)), closedByClient: client.closed)
            conversations.update { $0.append(conversation) }
            client.close()
        }
        guard let hello = client.readLine() else { return }
        lines.append(hello)
        let welcome = String(decoding: Reply.welcome(version: wireVersion, name: "beta", capacity: 4, jobs: nil).line.dropLast(),
                             as: UTF8.self)
        if script == .plainWelcome {
            try? client.send(welcome)
            return
        }
        let nonce = Secrets.randomBytes(32)
        try? client.send(#"{"type":"challenge","nonce":"\#(Secrets.hex(nonce))"}"#)
        guard let auth = client.readLine() else { return }
        lines.append(auth)
        switch script {
        case .plainWelcome, .challengeThenPlainWelcome:
            try? client.send(welcome)
        case .challengeThenMadeUpSeal:
            try? client.send("0 \(Secrets.hex(Secrets.randomBytes(16))) \(welcome)")
        case .challengeThenAnotherTokensSeal:
            let guess = HandTranscript(token: "a guess at the token", hello: Array(hello.utf8), nodeNonce: nonce)
            try? client.send(HandTranscript.seal(welcome, sequence: 0, key: guess.nodeToCoordinator))
        }
    }
}

/// A check that failed on a thread of its own, where `#expect` cannot name the test: thrown
/// instead, it fails the test that awaits the thread.
package struct CheckFailed: Error, CustomStringConvertible {
    package let description: String
    package init(description: String) { self.description = description }
}

/// Throws `CheckFailed(message)` unless `condition` holds (for code on threads of their own).
package func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailed(description: message()) }
}
