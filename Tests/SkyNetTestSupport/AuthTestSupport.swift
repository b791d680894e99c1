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

/// A node that pretends to know the token, written for the tests (127.0.0.1, port 0): it answers
/// each hello as its `Script` says, then records every line the client sends until it closes.
package final class ImpostorNode: Sendable {
    package enum Script: String, Sendable, CaseIterable, CustomStringConvertible {
        /// A welcome in plain, no handshake: a node without the token (or one that hopes so).
        case plainWelcome
        /// A handshake answer of made-up bytes.
        case madeUpHandshake
        /// The coordinator's own first message sent back as the answer (a reflection).
        case reflectedHandshake
        /// An answer made with another token: the impostor reads the first message as if it
        /// had the token, ignoring that it does not open.
        case anotherTokensHandshake

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
        let welcome = String(decoding: Reply.welcome(version: 2, name: "beta", capacity: 4, jobs: nil).line.dropLast(), as: UTF8.self)
        let first = (jsonFields(hello)?["noise"] as? String).flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        let answer: [UInt8]
        switch script {
        case .plainWelcome:
            try? client.send(welcome)
            return
        case .madeUpHandshake:
            answer = Secrets.randomBytes(32 + 16 + welcome.utf8.count)
        case .reflectedHandshake:
            answer = first
        case .anotherTokensHandshake:
            // What a responder with another token sends: its key, and the welcome under keys
            // the real coordinator cannot make.
            var guess = LinkKey(token: Array("a guess at the token".utf8)).initiator()
            let made = (try? guess.writeMessage(payload: Array(welcome.utf8))) ?? []
            answer = Array(made.prefix(32)) + Array(made.dropFirst(32))
        }
        try? client.send(#"{"type":"handshake","noise":"\#(answer.base64)"}"#)
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
