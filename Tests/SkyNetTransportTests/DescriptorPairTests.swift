import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// A `Connection` over a pair of pipes is the same kind of link as one over a socket: lines
/// both ways, in order, through full pipe buffers; the end of either side reaches the other;
/// and a close wakes threads blocked on pipes, which `shutdown` cannot reach.
@Suite(.timeLimit(.minutes(2)))
struct DescriptorPairTests {
    /// What one end of a link received.
    struct Received {
        var lines: [String] = []
        var closed: Connection.CloseReason?
    }

    /// Starts `connection`, keeping what it receives in the returned value.
    func started(_ connection: Connection) -> Watched<Received> {
        let received = Watched(Received())
        connection.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            received.update { $0.lines.append(String(decoding: line, as: UTF8.self)) }
        }, onClose: { why in received.update { $0.closed = why } })
        return received
    }

    /// Two connections joined by two pipes, as a coordinator and the node at the other end of
    /// an SSH channel are.
    func pipeLink() throws -> (left: Connection, right: Connection) {
        let leftToRight = try ChildProcess.makePipe(), rightToLeft = try ChildProcess.makePipe()
        let left = Connection(stream: try DescriptorPair(reading: rightToLeft.read, writing: leftToRight.write), peer: "right")
        let right = Connection(stream: try DescriptorPair(reading: leftToRight.read, writing: rightToLeft.write), peer: "left")
        return (left, right)
    }

    @Test func linesCrossBothWaysInOrderThroughFullPipeBuffersAndACloseEndsThePeer() async throws {
        let (left, right) = try pipeLink()
        let atLeft = started(left), atRight = started(right)
        // 20,000 lines of 100 bytes: thirty times a pipe's 64 KiB, sent without waiting, so
        // most of them queue and go out on the flusher thread.
        let count = 20_000, padding = String(repeating: "x", count: 90)
        for index in 0..<count {
            try left.send(Array("L\(index) \(padding)\n".utf8))
            try right.send(Array("R\(index) \(padding)\n".utf8))
        }
        try await atRight.wait { $0.lines.count == count }
        try await atLeft.wait { $0.lines.count == count }
        #expect(atRight.value.lines == (0..<count).map { "L\($0) \(padding)" })
        #expect(atLeft.value.lines == (0..<count).map { "R\($0) \(padding)" })

        left.close()
        try await atRight.wait { $0.closed != nil }
        #expect(atRight.value.closed?.description == "closed by peer")
        _ = try await withTimeout(.seconds(10)) { await left.closed.value }
        #expect(throws: Connection.Closed.self) { try right.send(Array("late\n".utf8)) }
    }

    /// A peer that never reads: the kernel's buffer fills, the flusher blocks waiting for room,
    /// and the reader waits for a line that never comes. `close` must wake both.
    @Test func closeWakesAReaderAndAFlusherBlockedOnPipes() async throws {
        let toPeer = try ChildProcess.makePipe(), fromPeer = try ChildProcess.makePipe()
        defer { for fd in [toPeer.read, fromPeer.write] { close(fd) } }
        let connection = Connection(stream: try DescriptorPair(reading: fromPeer.read, writing: toPeer.write), peer: "silent")
        let received = started(connection)
        for _ in 0..<16_384 { try connection.send(Array(String(repeating: "y", count: 99).appending("\n").utf8)) }
        #expect(connection.queuedBytes > 0)  // 1.6 MiB into a pipe of at most 1 MiB: the rest waits
        connection.close()
        let reason = try await withTimeout(.seconds(10)) { await connection.closed.value }
        #expect(reason.description == "closed")
        #expect(received.value.lines.isEmpty)
    }

    /// The pair never makes a description it shares non-blocking: a pipe's write end (here one
    /// whose open file another descriptor shares, as a terminal that is also stderr would) is
    /// opened again as the pair's own, and the shared one keeps blocking writes, during and after.
    @Test func theWriteEndsSharedDescriptionNeverTurnsNonBlocking() async throws {
        let pipe = try ChildProcess.makePipe()
        let ours = dup(pipe.write)
        defer { close(ours); close(pipe.read) }
        let pair = try DescriptorPair(reading: open("/dev/null", O_RDONLY), writing: pipe.write)
        #expect(fcntl(ours, F_GETFL) & O_NONBLOCK == 0)
        #expect(fcntl(pair.writing, F_GETFL) & O_NONBLOCK != 0)  // its own description does not wait
        // Still the same pipe: what the pair sends arrives at the read end.
        let sent = try pair.send(Array("through\n".utf8), wait: false)
        #expect(sent == 8)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(read(pipe.read, &buffer, 16) == 8)
        pair.close()
        #expect(fcntl(ours, F_GETFL) & O_NONBLOCK == 0)
    }

    /// A socket as the write end is sent to without waiting, by the call's flag, not the socket's.
    @Test func aSocketWriteEndKeepsItsFlags() async throws {
        let (server, client) = try await loopbackPair()
        defer { client.close() }
        let pair = try DescriptorPair(reading: open("/dev/null", O_RDONLY), writing: server.descriptor)
        #expect(fcntl(server.descriptor, F_GETFL) & O_NONBLOCK == 0)
        #expect(try pair.send(Array("x\n".utf8), wait: false) == 2)
        pair.close()
    }

    @Test func aReceiveTimeoutEndsAWaitForBytesThatNeverCome() async throws {
        let pipe = try ChildProcess.makePipe()
        defer { close(pipe.write) }
        let pair = try DescriptorPair(reading: pipe.read, writing: open("/dev/null", O_WRONLY))
        defer { pair.close() }
        pair.setReceiveTimeout(.milliseconds(50))
        let outcome = try await onOwnThread(named: "test-receive") {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
            defer { buffer.deallocate() }
            return Result { () throws(SocketError) in try pair.receive(into: buffer) }
        }
        #expect(throws: SocketError.self) { try outcome.get() }
    }

    /// A child process as the peer: `cat` echoes each line back over its stdin and stdout, and
    /// closing the connection is the end of its input, so it exits.
    @Test func aChildProcessOnTheOtherEndEchoesLinesAndEndsWithTheConnection() async throws {
        let toChild = try ChildProcess.makePipe(), fromChild = try ChildProcess.makePipe()
        var options = ChildProcess.Options()
        options.searchPath = true
        options.stdin = .descriptor(toChild.read)
        options.stdout = .descriptor(fromChild.write)
        let child = try ChildProcess.spawn("cat", options)
        close(toChild.read)
        close(fromChild.write)
        let connection = Connection(stream: try DescriptorPair(reading: fromChild.read, writing: toChild.write), peer: "cat")
        let received = started(connection)
        do {
            for index in 0..<500 { try connection.send(Array("line \(index)\n".utf8)) }
            try await received.wait { $0.lines.count == 500 }
            #expect(received.value.lines == (0..<500).map { "line \($0)" })
            connection.close()
            let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
            #expect(exit.reason == .exited(0))  // EOF, not a signal: the close reached it
        } catch {
            connection.close()
            _ = await child.stop(grace: .milliseconds(100))
            throw error
        }
    }
}
