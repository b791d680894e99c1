import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// A socket peer that sends its requests and closes its end (a half-close: it still reads)
/// gets every reply that was queued when the end of its input was read; a connection closed
/// on our side ends even while its reading is paused.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionHalfCloseTests {
    /// Closed while its reading is paused for replies (not watched for reading), with a few
    /// bytes of the peer's unread: the connection still ends, reading on to the end that the
    /// shutdown makes.
    @Test func aConnectionClosedWhileItsReadingIsPausedEnds() async throws {
        let (server, client) = try await loopbackPair()
        server.setBufferSizes(send: 16384, receive: 16384)
        client.setBufferSizes(send: 16384, receive: 16384)
        defer { client.close() }
        var limits = Connection.Limits()
        limits.pauseReadingAbove = 64 * 1024
        let connection = Connection(socket: server, peer: "paused", limits: limits)
        defer { connection.close() }
        let reply = Array((String(repeating: "r", count: 256 * 1024 - 1) + "\n").utf8)
        let lines = Watched(0), ended = Watched(false)
        connection.start(onEvent: { event in
            guard case .line = event else { return }
            try? connection.send(reply)  // the peer reads none: reading pauses after the first
            lines.update { $0 += 1 }
        }, onClose: { _ in ended.update { $0 = true } })
        #expect(write(client.descriptor, "1\n", 2) == 2)
        try await lines.wait(upTo: .seconds(10)) { $0 == 1 }
        #expect(connection.queuedBytes > 64 * 1024, "reading is paused")
        #expect(write(client.descriptor, "2\n", 2) == 2)  // waits in the kernel, unread
        connection.close()
        try await ended.wait(upTo: .seconds(20)) { $0 }
    }

    @Test func repliesQueuedWhenThePeerClosesItsEndStillLeave() async throws {
        let (server, client) = try await loopbackPair()
        // Small buffers: the replies wait in the connection's queue, not in the kernel.
        server.setBufferSizes(send: 16384, receive: 16384)
        client.setBufferSizes(send: 16384, receive: 16384)
        let (stream, peer) = (server, client.descriptor)
        defer { client.close() }
        let reply = Array((String(repeating: "r", count: 256 * 1024 - 1) + "\n").utf8)
        let ended = Watched(false)
        var limits = Connection.Limits()
        limits.repliesAfterEnd = .seconds(20)  // the test's threads may be kept waiting for seconds
        let connection = Connection(stream: stream, peer: "half", limits: limits)
        defer { connection.close() }
        connection.start(onEvent: { event in
            guard case .line = event else { return }
            try? connection.send(reply)
        }, onClose: { _ in ended.update { $0 = true } })
        // The peer's reader is running before it starts to read: a thread started later may be
        // kept waiting longer than the second the replies are given.
        let go = DispatchSemaphore(value: 0)
        let reading = Task {
            try await onOwnThread(named: "test-half") { () -> Int in
                go.wait()
                return DescriptorPairTests.readBytes(from: peer, count: 4 * reply.count)
            }
        }
        #expect(write(peer, "1\n2\n3\n4\n", 8) == 8)
        #expect(shutdown(peer, Int32(SHUT_WR)) == 0)
        // The end of its input is read while the replies (1 MiB, more than the kernel holds)
        // still wait; then the peer reads (well within the time they are given).
        try await Task.sleep(for: .milliseconds(50))
        go.signal()
        let read = try await reading.value
        #expect(read == 4 * reply.count, "\(read) bytes read; ended: \(ended.value)")
        try await ended.wait(upTo: .seconds(20)) { $0 }
    }
}
