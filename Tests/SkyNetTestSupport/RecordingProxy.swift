import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// A TCP proxy for tests, between a client (the coordinator) and a server (a node), on
/// 127.0.0.1 port 0 only. It records every byte each side sends and can tamper with one line:
/// flip one byte in it, or send it again (a replay).
///
/// Blocking calls run on threads of its own (an accept thread, two pumps per connection),
/// never on the cooperative pool. It is bounded: at most `maxConnections` connections in its
/// life (more are closed at once), `maxRecordedBytes` recorded per direction of a connection
/// (`Recording.truncated` says when more came), lines held back at most 1 MiB.
/// `withRecordingProxy(to:tamper:_:)` stops it on every path.
package final class RecordingProxy: Sendable {
    /// Which side sent the bytes: the client that connected to the proxy, or the server.
    package enum Direction: Int, Sendable, CustomStringConvertible {
        case fromClient, fromServer
        package var description: String { self == .fromClient ? "client → server" : "server → client" }
    }

    /// The one change the proxy makes, to the first line that fits it.
    package struct Tamper: Sendable {
        package enum Action: Sendable {
            /// XOR 0x01 into the byte `fromEnd` bytes before the newline (1: the last byte).
            case flip(fromEnd: Int)
            /// Send the line again after `laterBy` more lines of its direction (0: at once).
            case replay(laterBy: Int)
        }
        package var direction: Direction
        package var action: Action
        /// The line picked: the `occurrence`-th (from 0) line after the handshake that contains
        /// `matching` (any line when nil), on the `connection`-th connection (from 0).
        package var occurrence: Int
        package var matching: String?
        package var connection: Int
        /// Lines of each direction that belong to the handshake (SkyNet's token handshake: 2).
        package var handshakeLines: Int

        package static func flip(_ direction: Direction, occurrence: Int, matching: String? = nil, fromEnd: Int = 3,
                                connection: Int = 0, handshakeLines: Int = 2) -> Tamper {
            Tamper(direction: direction, action: .flip(fromEnd: fromEnd), occurrence: occurrence, matching: matching,
                   connection: connection, handshakeLines: handshakeLines)
        }

        package static func replay(_ direction: Direction, occurrence: Int, matching: String? = nil, laterBy: Int = 0,
                                  connection: Int = 0, handshakeLines: Int = 2) -> Tamper {
            Tamper(direction: direction, action: .replay(laterBy: laterBy), occurrence: occurrence, matching: matching,
                   connection: connection, handshakeLines: handshakeLines)
        }
    }

    /// What the proxy did to a line: `original` as its sender sent it, `sent` what went on.
    package struct Tampering: Sendable {
        package let connection: Int
        package let direction: Direction
        /// The index of the line in its direction, counting the handshake's lines from 0.
        package let lineIndex: Int
        package let original: [UInt8]
        package let sent: [UInt8]
        package let at: ContinuousClock.Instant
    }

    /// Every byte of one connection, as each side sent it (before any tampering).
    package struct Recording: Sendable {
        package internal(set) var fromClient: [UInt8] = []
        package internal(set) var fromServer: [UInt8] = []
        /// More than `maxRecordedBytes` came in some direction: the rest is not recorded.
        package internal(set) var truncated = false
        /// When both pumps had ended (nil: still open).
        package internal(set) var endedAt: ContinuousClock.Instant?

        package func bytes(_ direction: Direction) -> [UInt8] { direction == .fromClient ? fromClient : fromServer }

        /// The complete lines of `direction`, without their newlines.
        package func lines(_ direction: Direction) -> [String] {
            var lines = bytes(direction).split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            lines.removeLast()  // after the last newline: an unfinished line, or nothing
            return lines
        }
    }

    /// Per connection: its recording, its open pumps, and its end for awaiting.
    struct Link: Sendable {
        var recording = Recording()
        var pumps = 2
        var lines = [0, 0]
        let ended = AsyncSignal<Void>()
    }

    /// Everything that changes, behind one lock.
    struct State: Sendable {
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

    package static let maxLineBytes = 1 << 20
    package let maxConnections: Int
    package let maxRecordedBytes: Int
    /// The port the proxy listens on (127.0.0.1).
    package let port: Int
    let targetPort: Int
    let listener: Socket
    let state: Locked<State>
    let threadsDone = AsyncSignal<Void>()
    /// Fulfilled with the first tampering, so a test can await it.
    package let tampered = AsyncSignal<Tampering>()

    /// Listens on 127.0.0.1 port 0 and forwards each connection to 127.0.0.1:`targetPort`.
    package init(to targetPort: Int, tamper: Tamper? = nil, maxConnections: Int = 64, maxRecordedBytes: Int = 16 << 20) throws {
        self.targetPort = targetPort
        self.maxConnections = maxConnections
        self.maxRecordedBytes = maxRecordedBytes
        listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 16)
        port = try listener.localAddress().port
        state = Locked(State(threads: 1, tamper: tamper))
        spawn("proxy-accept") { [self] in acceptLoop() }
    }

    /// The recordings of every connection so far, in the order they were accepted.
    package var recordings: [Recording] { state.withLock { $0.links.map(\.recording) } }
    /// What the proxy changed, in order.
    package var tamperings: [Tampering] { state.withLock { $0.tamperings } }

    /// Waits until the `index`-th connection (from 0) has ended; false if there is no such connection.
    package func waitForEnd(ofConnection index: Int) async -> Bool {
        guard let ended = state.withLock({ $0.links.indices.contains(index) ? $0.links[index].ended : nil }) else { return false }
        await ended.value
        return true
    }

    /// Stops accepting, cuts every connection and waits until every thread of the proxy has ended.
    package func stop() async {
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
}

/// Runs `body` with a proxy to 127.0.0.1:`targetPort` and stops the proxy on every path.
package func withRecordingProxy<T: Sendable>(
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
