import Foundation
import SkyNet

/// A TCP proxy for tests, between a client (the coordinator) and a server (a node), on
/// 127.0.0.1 port 0 only. It records every byte each side sends and can tamper with one line:
/// flip one byte in it, or send it again (a replay).
///
/// Blocking calls run on threads of its own (an accept thread, two pumps per connection),
/// never on the cooperative pool. It is bounded: at most `maxConnections` connections in its
/// life (more are closed at once), `maxRecordedBytes` recorded per direction of a connection
/// (`Recording.truncated` says when more came), lines held back at most 1 MiB.
/// `withRecordingProxy(to:tamper:_:)` stops it on every path.
public final class RecordingProxy: Sendable {
    /// Which side sent the bytes: the client that connected to the proxy, or the server.
    public enum Direction: Int, Sendable, CustomStringConvertible {
        case fromClient, fromServer
        public var description: String { self == .fromClient ? "client → server" : "server → client" }
    }

    /// The one change the proxy makes, to the first line that fits it.
    public struct Tamper: Sendable {
        public enum Action: Sendable {
            /// XOR 0x01 into the byte `fromEnd` bytes before the newline (1: the last byte).
            case flip(fromEnd: Int)
            /// Send the line again after `laterBy` more lines of its direction (0: at once).
            case replay(laterBy: Int)
        }
        public var direction: Direction
        public var action: Action
        /// The line picked: the `occurrence`-th (from 0) line after the handshake that contains
        /// `matching` (any line when nil), on the `connection`-th connection (from 0).
        public var occurrence: Int
        public var matching: String?
        public var connection: Int
        /// Lines of each direction that belong to the handshake (SkyNet's token handshake: 2).
        public var handshakeLines: Int

        public static func flip(_ direction: Direction, occurrence: Int, matching: String? = nil, fromEnd: Int = 3,
                                connection: Int = 0, handshakeLines: Int = 2) -> Tamper {
            Tamper(direction: direction, action: .flip(fromEnd: fromEnd), occurrence: occurrence, matching: matching,
                   connection: connection, handshakeLines: handshakeLines)
        }

        public static func replay(_ direction: Direction, occurrence: Int, matching: String? = nil, laterBy: Int = 0,
                                  connection: Int = 0, handshakeLines: Int = 2) -> Tamper {
            Tamper(direction: direction, action: .replay(laterBy: laterBy), occurrence: occurrence, matching: matching,
                   connection: connection, handshakeLines: handshakeLines)
        }
    }

    /// What the proxy did to a line: `original` as its sender sent it, `sent` what went on.
    public struct Tampering: Sendable {
        public let connection: Int
        public let direction: Direction
        /// The index of the line in its direction, counting the handshake's lines from 0.
        public let lineIndex: Int
        public let original: [UInt8]
        public let sent: [UInt8]
        public let at: ContinuousClock.Instant
    }

    /// Every byte of one connection, as each side sent it (before any tampering).
    public struct Recording: Sendable {
        public internal(set) var fromClient: [UInt8] = []
        public internal(set) var fromServer: [UInt8] = []
        /// More than `maxRecordedBytes` came in some direction: the rest is not recorded.
        public internal(set) var truncated = false
        /// When both pumps had ended (nil: still open).
        public internal(set) var endedAt: ContinuousClock.Instant?

        public func bytes(_ direction: Direction) -> [UInt8] { direction == .fromClient ? fromClient : fromServer }

        /// The complete lines of `direction`, without their newlines.
        public func lines(_ direction: Direction) -> [String] {
            var lines = bytes(direction).split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            lines.removeLast()  // after the last newline: an unfinished line, or nothing
            return lines
        }
    }

    /// Per connection: its recording, its open pumps, and its end for awaiting.
    private struct Link: Sendable {
        var recording = Recording()
        var pumps = 2
        var lines = [0, 0]
        let ended = AsyncSignal<Void>()
    }

    /// Everything that changes, behind one lock.
    private struct State: Sendable {
        var stopped = false
        var threads = 0
        var open: Set<Socket> = []
        var links: [Link] = []
        var tamper: Tamper?
        var matched = 0
        /// A replay waiting for its turn: the line and how many more lines must pass first.
        var replay: (line: [UInt8], index: Int, left: Int)?
        var tamperings: [Tampering] = []
    }

    public static let maxLineBytes = 1 << 20
    public let maxConnections: Int
    public let maxRecordedBytes: Int
    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    private let targetPort: Int
    private let listener: Socket
    private let state: Locked<State>
    private let threadsDone = AsyncSignal<Void>()
    /// Fulfilled with the first tampering, so a test can await it.
    public let tampered = AsyncSignal<Tampering>()

    /// Listens on 127.0.0.1 port 0 and forwards each connection to 127.0.0.1:`targetPort`.
    public init(to targetPort: Int, tamper: Tamper? = nil, maxConnections: Int = 64, maxRecordedBytes: Int = 16 << 20) throws {
        self.targetPort = targetPort
        self.maxConnections = maxConnections
        self.maxRecordedBytes = maxRecordedBytes
        listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 16)
        port = try listener.localAddress().port
        state = Locked(State(threads: 1, tamper: tamper))
        spawn("proxy-accept") { [self] in acceptLoop() }
    }

    /// The recordings of every connection so far, in the order they were accepted.
    public var recordings: [Recording] { state.withLock { $0.links.map(\.recording) } }
    /// What the proxy changed, in order.
    public var tamperings: [Tampering] { state.withLock { $0.tamperings } }

    /// Waits until the `index`-th connection (from 0) has ended; false if there is no such connection.
    public func waitForEnd(ofConnection index: Int) async -> Bool {
        guard let ended = state.withLock({ $0.links.indices.contains(index) ? $0.links[index].ended : nil }) else { return false }
        await ended.value
        return true
    }

    /// Stops accepting, cuts every connection and waits until every thread of the proxy has ended.
    public func stop() async {
        // Under the lock: a pump closes its sockets only after taking them out of `open`, so
        // no descriptor shut down here can have been closed (and reused) already.
        state.withLock { state in
            state.stopped = true
            for socket in state.open { socket.shutdown() }
        }
        listener.shutdown()
        await threadsDone.value
        listener.close()
    }

    // MARK: - Threads

    private func acceptLoop() {
        defer { threadEnded() }
        while true {
            guard let (client, _) = try? listener.accept() else { return }
            let index: Int? = state.withLock { state in
                guard !state.stopped, state.links.count < maxConnections else { return nil }
                state.links.append(Link())
                state.open.insert(client)
                return state.links.count - 1
            }
            guard let index else {
                client.close()
                if state.withLock({ $0.stopped }) { return } else { continue }
            }
            guard let server = try? Socket.connect(host: "127.0.0.1", port: targetPort, timeout: .seconds(5)) else {
                state.withLock { state in
                    state.open.remove(client)
                    state.links[index].pumps = 0
                    state.links[index].recording.endedAt = .now
                }
                client.close()
                state.withLock { $0.links[index].ended }.fulfil(())
                continue
            }
            let admitted = state.withLock { state in
                guard !state.stopped else { return false }
                state.open.insert(server)
                state.threads += 2
                return true
            }
            guard admitted else {
                _ = state.withLock { $0.open.remove(client) }
                client.close()
                server.close()
                return
            }
            spawn("proxy-up-\(index)") { [self] in pump(.fromClient, index, from: client, to: server) }
            spawn("proxy-down-\(index)") { [self] in pump(.fromServer, index, from: server, to: client) }
        }
    }

    /// Copies `from` to `to` line by line (recording, tampering), until `from` ends or a send
    /// fails; then half-closes `to` (or cuts both on a failure). The last pump of the connection
    /// closes both sockets.
    private func pump(_ direction: Direction, _ index: Int, from: Socket, to: Socket) {
        defer { threadEnded() }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var failed = false
        reading: while true {
            guard let count = try? chunk.withUnsafeMutableBytes({ try from.receive(into: $0) }), count > 0 else { break }
            record(chunk[..<count], direction, index)
            pending += chunk[..<count]
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = Array(pending[...newline])
                pending.removeFirst(newline + 1)
                guard sendAll(forwarded(line, direction, index), to: to) else { failed = true; break reading }
            }
            if pending.count > Self.maxLineBytes {
                guard sendAll(pending, to: to) else { failed = true; break }
                pending.removeAll()
            }
        }
        if !failed, !pending.isEmpty { failed = !sendAll(pending, to: to) }
        if failed { from.shutdown(); to.shutdown() } else { to.shutdown(reading: false, writing: true) }
        let last: AsyncSignal<Void>? = state.withLock { state in
            state.links[index].pumps -= 1
            guard state.links[index].pumps == 0 else { return nil }
            state.links[index].recording.endedAt = .now
            state.open.remove(from)
            state.open.remove(to)
            return state.links[index].ended
        }
        if let last {
            from.close()
            to.close()
            last.fulfil(())
        }
    }

    private func record(_ bytes: ArraySlice<UInt8>, _ direction: Direction, _ index: Int) {
        state.withLock { state in
            var recording = state.links[index].recording
            state.links[index].recording = Recording()  // no copy of the bytes on append
            if recording.bytes(direction).count + bytes.count > maxRecordedBytes {
                recording.truncated = true
            } else if direction == .fromClient {
                recording.fromClient += bytes
            } else {
                recording.fromServer += bytes
            }
            state.links[index].recording = recording
        }
    }

    /// The bytes to send for `line` (newline included): the line, or the tamper's change of it.
    private func forwarded(_ line: [UInt8], _ direction: Direction, _ index: Int) -> [UInt8] {
        let (bytes, done): ([UInt8], Tampering?) = state.withLock { state in
            let lineIndex = state.links[index].lines[direction.rawValue]
            state.links[index].lines[direction.rawValue] += 1
            func tampering(_ original: [UInt8], _ at: Int, _ sent: [UInt8]) -> Tampering {
                let done = Tampering(connection: index, direction: direction, lineIndex: at, original: original, sent: sent, at: .now)
                state.tamperings.append(done)
                return done
            }
            if let replay = state.replay, state.tamperings.isEmpty, let tamper = state.tamper,
               tamper.connection == index, tamper.direction == direction {
                guard replay.left == 0 else { state.replay?.left -= 1; return (line, nil) }
                state.replay = nil
                return (line + replay.line, tampering(replay.line, replay.index, line + replay.line))
            }
            guard let tamper = state.tamper, state.replay == nil, state.tamperings.isEmpty,
                  tamper.connection == index, tamper.direction == direction, lineIndex >= tamper.handshakeLines,
                  tamper.matching.map({ String(decoding: line, as: UTF8.self).contains($0) }) ?? true
            else { return (line, nil) }
            state.matched += 1
            guard state.matched == tamper.occurrence + 1 else { return (line, nil) }
            switch tamper.action {
            case .flip(let fromEnd):
                var changed = line
                let at = line.count - 1 - fromEnd
                guard changed.indices.contains(at) else { return (line, nil) }
                changed[at] ^= 0x01
                return (changed, tampering(line, lineIndex, changed))
            case .replay(let laterBy) where laterBy == 0:
                return (line + line, tampering(line, lineIndex, line + line))
            case .replay(let laterBy):
                state.replay = (line, lineIndex, laterBy - 1)
                return (line, nil)
            }
        }
        if let done { tampered.fulfil(done) }
        return bytes
    }

    private func sendAll(_ bytes: [UInt8], to socket: Socket) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let sent = try? socket.send(Array(bytes[offset...]), wait: true), sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private func threadEnded() {
        let last = state.withLock { state in
            state.threads -= 1
            return state.threads == 0
        }
        if last { threadsDone.fulfil(()) }
    }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.stackSize = 512 * 1024
        thread.start()
    }
}

/// Runs `body` with a proxy to 127.0.0.1:`targetPort` and stops the proxy on every path.
public func withRecordingProxy<T: Sendable>(
    to targetPort: Int, tamper: RecordingProxy.Tamper? = nil, maxConnections: Int = 64,
    _ body: (RecordingProxy) async throws -> T
) async throws -> T {
    let proxy = try RecordingProxy(to: targetPort, tamper: tamper, maxConnections: maxConnections)
    do {
        let result = try await body(proxy)
        await proxy.stop()
        return result
    } catch {
        await proxy.stop()
        throw error
    }
}
