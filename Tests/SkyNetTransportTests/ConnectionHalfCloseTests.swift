import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// A peer that sends its requests and closes its end (a half-close: it still reads) gets every
/// reply that was queued when the end of its input was read.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionHalfCloseTests {
    @Test(arguments: ConnectionHoldTests.Kind.allCases)
    func repliesQueuedWhenThePeerClosesItsEndStillLeave(kind: ConnectionHoldTests.Kind) async throws {
        let (stream, peer, closePeer) = try await ConnectionHoldTests().link(kind)
        defer { closePeer() }
        let reply = Array((String(repeating: "r", count: 256 * 1024 - 1) + "\n").utf8)
        let ended = Watched(false)
        let connection = Connection(stream: stream, peer: "half")
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
        // still wait; then the peer reads (well within the second they are given).
        try await Task.sleep(for: .milliseconds(50))
        go.signal()
        #expect(try await reading.value == 4 * reply.count)
        try await ended.wait(upTo: .seconds(20)) { $0 }
    }
}
