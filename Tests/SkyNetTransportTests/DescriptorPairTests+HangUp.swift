import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// A reader that holds back (back pressure: its peer does not read its replies) still sees
/// its peer close a pipe, which is the only end of input a pipe has; a socket peer's
/// half-close is no such end: it may still read the replies, and then be read from again.
extension DescriptorPairTests {
    // A hang-up is awaited (bounded), not looked for once: a child that a test beside this
    // one spawns holds copies of our descriptors from its fork to its exec.
    @Test func aPipesInputHangsUpWhenItsLastWriterClosesWithBytesUnread() async throws {
        let pipe = try ChildProcess.makePipe()
        let pair = try DescriptorPair(reading: pipe.read, writing: open("/dev/null", O_WRONLY))
        defer { pair.close() }
        #expect(write(pipe.write, "x", 1) == 1)
        #expect(!pair.inputHasHungUp())
        close(pipe.write)
        try await awaitState(upTo: .seconds(5)) { pair.inputHasHungUp() }  // though the byte is still there to read
    }

    @Test func aSocketsHalfCloseIsNoHangUpButItsCloseIs() async throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        let pair = try DescriptorPair(reading: ends[0], writing: ends[0])
        defer { pair.close() }
        #expect(write(ends[1], "x", 1) == 1)
        #expect(Glibc.shutdown(ends[1], Int32(SHUT_WR)) == 0)
        #expect(!pair.inputHasHungUp())
        close(ends[1])
        try await awaitState(upTo: .seconds(5)) { pair.inputHasHungUp() }
    }

    @Test func endlessInputNeverHangsUp() throws {
        let pair = try DescriptorPair(reading: open("/dev/null", O_RDONLY), writing: open("/dev/null", O_WRONLY))
        defer { pair.close() }
        #expect(!pair.inputHasHungUp())
    }

    /// How the reader's peer is joined to it.
    enum PeerKind: String, CaseIterable, Sendable {
        /// Two pipes (`skynet node --stdio` under most SSH servers).
        case pipes
        /// One socket of a socketpair, as both the pair's input and output (an SSH server may
        /// hand its session one).
        case socketPair
        /// A `Socket` over loopback TCP, for comparison: no `InputHangUpReporting` there.
        case tcp
    }

    /// A stream of `kind` and the raw descriptors of its peer's end (`write` to send it lines,
    /// `read` to read its replies), with what closes the peer's end: all of it but the read
    /// end of a pipe, whose close the flusher would see (a peer that still holds it is the case
    /// in which only the hang-up can end the pause), and what closes that.
    func link(_ kind: PeerKind) async throws -> (stream: any ByteStream, write: Int32, read: Int32,
                                                 closePeer: @Sendable () -> Void, release: @Sendable () -> Void) {
        switch kind {
        case .pipes:
            let toPeer = try ChildProcess.makePipe(), fromPeer = try ChildProcess.makePipe()
            return (try DescriptorPair(reading: fromPeer.read, writing: toPeer.write), fromPeer.write, toPeer.read,
                    { close(fromPeer.write) }, { close(toPeer.read) })
        case .socketPair:
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { throw SocketError("socketpair") }
            let peer = ends[1]
            return (try DescriptorPair(reading: ends[0], writing: ends[0]), peer, peer, { close(peer) }, {})
        case .tcp:
            let (server, client) = try await loopbackPair()
            return (server, client.descriptor, client.descriptor, { client.close() }, {})
        }
    }

    /// The peer asks for replies it never reads, until the reader holds back; then sends one
    /// more line and closes its end. The connection ends, over pipes too, where no reply can
    /// tell it (a TCP peer's close with bytes unread resets the connection, which the blocked
    /// send sees; a pipe gives no such sign, so the hang-up is watched for).
    @Test(arguments: PeerKind.allCases)
    func aReaderHeldBackEndsWhenItsPeerCloses(kind: PeerKind) async throws {
        let peer = try await link(kind)
        defer { peer.release() }
        let link: (connection: Connection, received: Watched<Received>)
        do { link = try await heldBack(peer.stream, peer: peer.write) } catch {
            peer.closePeer()
            throw error
        }
        defer { link.connection.close() }
        #expect(write(peer.write, "late\n", 5) == 5)
        peer.closePeer()
        // Held back for good before the fix: the wait is what fails then. (No tighter bound: with
        // every suite running it took 2.2 s once, for a check made every 200 ms.)
        try await link.received.wait(upTo: .seconds(10)) { $0.closed != nil }
        // Over pipes the line sent last is never read: the hang-up ended the pause. (A TCP
        // reader may have been let go by a kernel buffer that grew, and read it.)
        if kind == .pipes { #expect(!link.received.value.lines.contains("late")) }
    }

    /// A socket peer that half-closes while the reader holds back has not hung up: it may still
    /// read the replies. The connection stays open, and once the replies are read it reads the
    /// line the peer sent last, then the end.
    @Test func aHalfCloseWhileTheReaderHoldsBackIsNoHangUp() async throws {
        let peer = try await link(.socketPair)
        defer { peer.closePeer(); peer.release() }
        let link = try await heldBack(peer.stream, peer: peer.write)
        defer { link.connection.close() }
        #expect(write(peer.write, "late\n", 5) == 5)
        #expect(Glibc.shutdown(peer.write, Int32(SHUT_WR)) == 0)
        // Three looks for a hang-up go by: none may end the connection.
        try await Task.sleep(for: Connection.hangUpCheck * 3 + .milliseconds(100))
        #expect(link.received.value.closed == nil)

        let expected = link.received.value.lines.count * Self.reply.count
        let read = try await onOwnThread(named: "test-drain") { Self.readBytes(from: peer.read, count: expected) }
        #expect(read == expected)
        try await link.received.wait(upTo: .seconds(5)) { $0.closed != nil }
        #expect(link.received.value.lines.last == "late")
        #expect(link.received.value.closed?.description == "closed by peer")
    }

    /// A line of 256 KiB: what each of the peer's lines but `late` is answered with.
    static let reply = Array((String(repeating: "r", count: 256 * 1024 - 1) + "\n").utf8)

    /// Starts a connection over `stream` that holds back reading above 64 KiB queued and answers
    /// each line but `late` with `reply`, then has `peer` (the other end's raw descriptor,
    /// never read from) send lines one by one until the reader holds back.
    func heldBack(_ stream: any ByteStream, peer: Int32) async throws -> (connection: Connection, received: Watched<Received>) {
        var limits = Connection.Limits()
        limits.pauseReadingAbove = 64 * 1024
        let connection = Connection(stream: stream, peer: "unread", limits: limits)
        let received = Watched(Received())
        connection.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            let text = String(decoding: line, as: UTF8.self)
            if text != "late" { try? connection.send(Self.reply) }  // queued before the line is seen
            received.update { $0.lines.append(text) }
        }, onClose: { why in received.update { $0.closed = why } })
        // The kernel's buffers take some MiB at most; the queue's limit is 8 MiB, 32 replies.
        for count in 1...30 {
            #expect(write(peer, "more\n", 5) == 5)
            try await received.wait(upTo: .seconds(10)) { $0.lines.count == count }
            if connection.queuedBytes > 64 * 1024 { return (connection, received) }
        }
        connection.close()
        throw SocketError("hold back", reason: "the reader never held back")
    }

    /// Reads and drops `count` bytes from `fd`; returns how many came within 10 s.
    static func readBytes(from fd: Int32, count: Int) -> Int {
        let deadline = ContinuousClock.now + .seconds(10)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var total = 0
        while total < count, ContinuousClock.now < deadline {
            var polled = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&polled, 1, 1000) >= 0 else { return total }
            guard polled.revents != 0 else { continue }
            let got = read(fd, &buffer, min(buffer.count, count - total))
            guard got > 0 else { return total }
            total += got
        }
        return total
    }
}
