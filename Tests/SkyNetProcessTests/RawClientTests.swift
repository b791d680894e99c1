import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A client that is not the coordinator: raw lines over a socket, as another program would.
final class RawLineClient: Sendable {
    let socket: Socket
    private let buffer = LineBuffer()
    /// Whether `close` ran: a descriptor closed twice may close another test's socket, which
    /// took its number meanwhile.
    private let closed = Locked(false)

    /// Connects; with `first`, sends that line at once, on the thread that connected. A node
    /// closes a connection that sends no hello within 3 s, and a test process whose pool is
    /// busy (the unit tests' opening burst) can take longer than that to resume an awaiting
    /// test: a hello sent from the connecting thread does not wait for the pool.
    init(port: Int, first: String? = nil) async throws {
        socket = try await onOwnThread(named: "test-connect") {
            let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
            if let first { try socket.sendAll(Array((first + "\n").utf8)) }
            return socket
        }
        socket.setReceiveTimeout(.seconds(10))
    }

    func send(_ text: String) throws {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            offset += try socket.send(Array(bytes[offset...]), wait: true)
        }
    }

    /// The next line from the node, as a JSON object; nil when the node closed the connection.
    func receive() async throws -> [String: Any]? {
        let socket = self.socket, buffer = self.buffer
        let line = try await onOwnThread(named: "test-read") { try buffer.nextLine(from: socket) }
        guard let line else { return nil }
        return try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    func exchange(_ text: String) async throws -> [String: Any]? {
        try send(text)
        return try await receive()
    }

    /// Closes the connection; later calls (and the deinit) do nothing.
    func close() {
        guard !closed.withLock({ closed in defer { closed = true }; return closed }) else { return }
        socket.close()
    }

    deinit { close() }
}

/// Bytes received but not yet split into lines, guarded by a lock (`Locked`).
final class LineBuffer: Sendable {
    private let pending = Locked<[UInt8]>([])

    func nextLine(from socket: Socket) throws -> String? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let line: String? = pending.withLock { pending in
                guard let newline = pending.firstIndex(of: 10) else { return nil }
                defer { pending.removeFirst(newline + 1) }
                return String(decoding: pending[..<newline], as: UTF8.self)
            }
            if let line { return line }
            let count = try chunk.withUnsafeMutableBytes { try socket.receive(into: $0) }
            if count == 0 { return nil }
            pending.withLock { $0.append(contentsOf: chunk[..<count]) }
        }
    }
}

extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct RawClientTests {
        let hello = #"{"type":"hello","version":1,"name":"raw"}"#

        @Test func aRawClientCanHelloPingScanAndSurviveAGarbageLine() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let node = try #require(cluster.node("beta"))
                let client = try await RawLineClient(port: node.port, first: hello)
                let welcome = try #require(try await client.receive())
                #expect(welcome["type"] as? String == "welcome")
                #expect(welcome["version"] as? Int == 1)
                #expect(welcome["name"] as? String == "beta")
                #expect(welcome["capacity"] as? Int == 4)

                let pong = try #require(try await client.exchange(#"{"type":"ping","id":1}"#))
                #expect(pong["type"] as? String == "pong")
                #expect(pong["id"] as? Int == 1)
                #expect(pong["running"] as? Int == 0)

                let task = UUID().uuidString.lowercased()
                let result = try #require(try await client.exchange(
                    #"{"type":"scan","id":2,"task":{"id":"\#(task)","input":7,"duration":0.05}}"#))
                #expect(result["type"] as? String == "result")
                #expect(result["id"] as? Int == 2)
                #expect(result["task"] as? String == task)
                #expect(result["result"] as? String == "7")

                let error = try #require(try await client.exchange("this is not json"))
                #expect(error["type"] as? String == "error")
                #expect(error["code"] as? String == "bad-request")

                let again = try #require(try await client.exchange(#"{"type":"ping","id":3}"#))
                #expect(again["type"] as? String == "pong")
                #expect(again["completed"] as? Int == 1)
            }
        }

        @Test func theFirstLineMustBeAHello() async throws {
            try await withCluster(nodes: 1) { cluster in
                let node = try #require(cluster.node("beta"))
                let client = try await RawLineClient(port: node.port)
                let error = try #require(try await client.exchange(#"{"type":"ping","id":1}"#))
                #expect(error["code"] as? String == "hello-required")
                #expect(try await client.receive() == nil)  // closed

                let other = try await RawLineClient(port: node.port, first: #"{"type":"hello","version":9}"#)
                let version = try #require(try await other.receive())
                #expect(version["code"] as? String == "unsupported-version")
                #expect(try await other.receive() == nil)
            }
        }

        @Test func linesThatCameWithARefusedHelloAreDropped() async throws {
            try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
                let node = try #require(cluster.node("beta"))
                let client = try await RawLineClient(port: node.port)
                let task = UUID().uuidString
                try client.send([#"{"type":"hello","version":3}"#, hello,
                                 #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":1,"duration":5}}"#].joined(separator: "\n"))
                #expect(try await client.receive()?["code"] as? String == "unsupported-version")
                #expect(try await client.receive() == nil)
                let watcher = try await RawLineClient(port: node.port, first: hello)
                _ = try await watcher.receive()
                #expect(try await watcher.exchange(#"{"type":"ping","id":1}"#)?["running"] as? Int == 0)
            }
        }

        @Test func aLineOverOneMebibyteIsRefusedAndTheConnectionClosed() async throws {
            try await withCluster(nodes: 1) { cluster in
                let node = try #require(cluster.node("beta"))
                let client = try await RawLineClient(port: node.port, first: hello)
                _ = try await client.receive()
                try client.send(String(repeating: "x", count: (1 << 20) + 10))
                let error = try #require(try await client.receive())
                #expect(error["code"] as? String == "frame-too-large")
                #expect(try await client.receive() == nil)
            }
        }
    }
}
