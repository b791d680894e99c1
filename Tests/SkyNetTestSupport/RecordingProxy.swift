import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// A TCP proxy for tests, between a client (the coordinator) and a server (a node), on
/// 127.0.0.1 port 0 only. It records every byte each side sends and can tamper with one frame
/// of an encrypted link: flip one byte in it, or send it again (a replay).
///
/// An encrypted link (docs/PROTOCOL.md, "Encrypted links") is, in each direction, one clear
/// line (the hello, or the node's handshake answer) and then binary frames, which the proxy
/// cannot read: a tamper picks its frame by its index, never by what it says. Bytes are passed
/// on as they come, except in the one direction a tamper watches, where they go on a whole
/// frame at a time (`LinkUnits`).
///
/// Blocking calls run on threads of its own (an accept thread, two pumps per connection),
/// never on the cooperative pool. It is bounded: at most `maxConnections` connections in its
/// life (more are closed at once), `maxRecordedBytes` recorded per direction of a connection
/// (`Recording.truncated` says when more came), a frame held back at most its 1 MiB limit.
/// `withRecordingProxy(to:tamper:_:)` stops it on every path.
package final class RecordingProxy: Sendable {
    /// Which side sent the bytes: the client that connected to the proxy, or the server.
    package enum Direction: Int, Sendable, CustomStringConvertible {
        case fromClient, fromServer
        package var description: String { self == .fromClient ? "client → server" : "server → client" }
    }

    /// The one change the proxy makes, to one frame after the handshake line.
    package struct Tamper: Sendable {
        package enum Action: Sendable {
            /// XOR 0x01 into the frame's byte `fromEnd` bytes before its end (1: the last byte
            /// of its tag; 17: the last byte of its ciphertext).
            case flip(fromEnd: Int)
            /// Send the frame again after `laterBy` more frames of its direction (0: at once).
            case replay(laterBy: Int)
        }
        package var direction: Direction
        package var action: Action
        /// The frame picked: the `frame`-th (from 0) frame `direction` sends after its first
        /// line, on the `connection`-th connection (from 0). It is also the counter its sender
        /// sealed it with: the welcome travels inside the handshake line, not in a frame.
        package var frame: Int
        package var connection: Int

        package static func flip(_ direction: Direction, frame: Int, fromEnd: Int = 17, connection: Int = 0) -> Tamper {
            Tamper(direction: direction, action: .flip(fromEnd: fromEnd), frame: frame, connection: connection)
        }

        package static func replay(_ direction: Direction, frame: Int, laterBy: Int = 0, connection: Int = 0) -> Tamper {
            Tamper(direction: direction, action: .replay(laterBy: laterBy), frame: frame, connection: connection)
        }
    }

    /// What the proxy did to a frame: `original` as its sender sent it (the length included),
    /// `sent` what went on in its place.
    package struct Tampering: Sendable {
        package let connection: Int
        package let direction: Direction
        /// The index of the frame (the one replayed, for a replay) among its direction's frames.
        package let frame: Int
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

        /// The complete lines of `direction`, without their newlines (for a plain link; on an
        /// encrypted one only the first is a line).
        package func lines(_ direction: Direction) -> [String] {
            var lines = bytes(direction).split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            lines.removeLast()  // after the last newline: an unfinished line, or nothing
            return lines
        }

        /// `direction`'s bytes split as an encrypted link's: its units in order, and the bytes
        /// of an unfinished one at the end (none when the units cover the stream exactly).
        package func units(_ direction: Direction) -> (units: [LinkUnits.Unit], unfinished: [UInt8]) {
            var splitter = LinkUnits()
            splitter.feed(bytes(direction)[...])
            var units: [LinkUnits.Unit] = []
            while let unit = splitter.next() { units.append(unit) }
            return (units, splitter.unfinished)
        }
    }

    /// Per connection: its recording, its open pumps, and its end for awaiting.
    struct Link: Sendable {
        var recording = Recording()
        var pumps = 2
        /// Frames each direction has sent (`Direction.rawValue`).
        var frames = [0, 0]
        let ended = AsyncSignal<Void>()
    }

    /// Everything that changes, behind one lock.
    struct State: Sendable {
        var stopped = false
        var threads = 0
        var open: Set<Socket> = []
        var links: [Link] = []
        var tamper: Tamper?
        /// A replay waiting for its turn: the frame and how many more frames must pass first.
        var replay: (frame: [UInt8], index: Int, left: Int)?
        var tamperings: [Tampering] = []
    }

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

/// Splits one direction of a link as docs/PROTOCOL.md frames an encrypted one: its first line
/// (the hello, or the node's answer), then frames of a 4-byte big-endian length and that many
/// bytes of ciphertext and tag. Bytes that cannot be that (a first line over 1 MiB, a length
/// shorter than a tag or over the limit) come out as they are, with all that follows them
/// (`raw`): so a plain link passes through unchanged, only later than it would.
package struct LinkUnits: Sendable {
    package enum Unit: Sendable, Equatable {
        /// The first line, its newline included.
        case line([UInt8])
        /// One frame: its length, then its ciphertext and tag.
        case frame([UInt8])
        /// Bytes that are not a unit of an encrypted link, and everything after them.
        case raw([UInt8])

        package var bytes: [UInt8] {
            switch self {
            case .line(let bytes), .frame(let bytes), .raw(let bytes): bytes
            }
        }
    }

    /// The longest first line, its newline included: a message of 1 MiB and the newline.
    package static let maxLineBytes = (1 << 20) + 1
    /// The largest length a frame may say: a message of 1 MiB and its 16-byte tag.
    package static let maxFrameLength = (1 << 20) + 16
    static let tagCount = 16, headerCount = 4

    private enum Phase { case line, frames, raw }
    private var phase = Phase.line
    private var pending: [UInt8] = []
    /// Where the next unit starts in `pending` (taken units are dropped at the next `feed`).
    private var start = 0

    package init() {}

    package mutating func feed(_ bytes: ArraySlice<UInt8>) {
        if start > 0 {
            pending.removeFirst(start)
            start = 0
        }
        pending += bytes
    }

    /// The bytes of a unit not yet complete.
    package var unfinished: [UInt8] { Array(pending[start...]) }

    /// The next complete unit, or nil until more bytes come.
    package mutating func next() -> Unit? {
        let available = pending.count - start
        switch phase {
        case .raw:
            return available > 0 ? .raw(take(available)) : nil
        case .line:
            if let newline = pending[start...].firstIndex(of: 0x0A) {
                phase = .frames
                return .line(take(newline + 1 - start))
            }
            guard available > Self.maxLineBytes else { return nil }
            phase = .raw
            return next()
        case .frames:
            guard available >= Self.headerCount else { return nil }
            let length = pending[start..<(start + Self.headerCount)].reduce(0) { $0 << 8 | Int($1) }
            guard (Self.tagCount...Self.maxFrameLength).contains(length) else {
                phase = .raw
                return next()
            }
            return available >= Self.headerCount + length ? .frame(take(Self.headerCount + length)) : nil
        }
    }

    private mutating func take(_ count: Int) -> [UInt8] {
        defer { start += count }
        return Array(pending[start..<(start + count)])
    }
}
