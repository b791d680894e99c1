import Foundation
import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import SkyNetTestSupport

/// A slow link: the kernel takes what the coordinator sends at once, and then drains it for
/// seconds, with the ping behind it. The draining shows the peer alive (it takes our bytes),
/// so the work is not failed at the first late pong; once the peer stops taking bytes, it is.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SlowLinkLivenessTests {
    /// A node that welcomes, then reads 4 KiB every 20 ms (200 KB/s) for `flow` from the first
    /// bytes after the hello, then stops reading; it never answers a ping. `reads` gets the
    /// time of each read.
    private func startSlowReader(flow: Duration, reads: Locked<[ContinuousClock.Instant]>) async throws -> Listener {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        try listener.start { socket, _ in
            startThread(named: "test-slow-reader") {
                defer { socket.close() }
                let hello = receiveLines(from: socket, count: 1, silence: .seconds(10))
                guard !hello.isEmpty else { return }
                _ = try? socket.send(Reply.welcome(version: 1, name: "slow", capacity: 2, jobs: ["t": "t"]).line, wait: true)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
                defer { buffer.deallocate() }
                // The hello's 10 s of silence would end the link when a loaded machine starves
                // the test between its welcome and its first line; the flow starts at that line.
                socket.setReceiveTimeout(.seconds(60))
                var end: ContinuousClock.Instant?
                while end.map({ ContinuousClock.now < $0 }) ?? true {
                    guard let count = try? socket.receive(into: buffer), count > 0 else { return }
                    if end == nil { end = .now + flow }
                    reads.withLock { $0.append(.now) }
                    sleepOnThisThread(for: .milliseconds(20))
                }
                sleepOnThisThread(for: .seconds(20))  // silent, reading nothing, until the test ends the link
            }
        }
        return listener
    }

    @Test func bytesTheKernelTookAtOnceAndDrainsSlowlyKeepThePeerAlive() async throws {
        let reads = Locked<[ContinuousClock.Instant]>([])
        let listener = try await startSlowReader(flow: .seconds(4), reads: reads)
        defer { listener.stop() }
        let peer = try await PeerConnection.open(name: "slow", host: "127.0.0.1", port: listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        // 512 KiB of lines nobody waits for, queued ahead of the work: more than the reader takes in a bound.
        var lines: [UInt8] = []
        let block = [UInt8](repeating: 0x41, count: 64 * 1024)
        for _ in 0..<8 { lines += block.withUnsafeBytes { FileChunk.line(id: 999, file: nil, offset: 0, bytes: $0) } }
        try peer.connection.send(lines)
        let id = peer.nextID()
        await #expect(throws: PeerUnresponsive.self) {
            try await peer.request(id: id, .job(id: id, task: ScanTask(input: 0, job: "t", text: "x")), liveness: .seconds(1))
        }
        // Unresponsive only once the reader had stopped taking bytes for a while (at 4 s, or
        // earlier when a loaded machine starved its thread), not at the first late pong while it
        // still read every 20 ms (queued bytes do not count as moved). No bound from the start:
        // a starved reader can stop taking bytes at any time.
        //
        // The coordinator sees bytes move only when the reader's kernel opens its window, after
        // about two loopback segments (128 KiB, 32 reads) were read: a reader starved into
        // sparse reads moves nothing for a second while still reading now and then. So a read
        // shortly before the failure is allowed when the reader itself stalled for 200 ms or
        // more in the second and a half before it; a steady reader never does.
        let failed = ContinuousClock.now, taken = reads.withLock { $0 }.filter { $0 <= failed }
        let lastRead = try #require(taken.last, "the reader took nothing")
        let recent = taken.filter { failed - $0 <= .milliseconds(1500) }
        let longestStall = zip(recent, recent.dropFirst()).map { $1 - $0 }.max() ?? .zero
        #expect(failed - lastRead >= .milliseconds(500) || longestStall >= .milliseconds(200),
                "\(taken.count) reads, the last \(failed - lastRead) before the failure, the longest stall \(longestStall)")
    }
}
