import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// A socket tells how much of what it took its peer has not taken yet (SIOCOUTQ): what lets a
/// coordinator see a slow link drain a queued megabyte while its ping waits behind it.
@Suite(.timeLimit(.minutes(1)))
struct SocketUnsentBytesTests {
    @Test func aSocketSaysWhatItsPeerHasNotTakenYet() async throws {
        let accepted = Locked<Socket?>(nil)
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        defer { listener.stop() }
        try listener.start { socket, _ in accepted.withLock { $0 = socket } }
        try await onOwnThread(named: "test-unsent") { () throws -> Void in
            let sender = try Socket.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(5))
            defer { sender.close() }
            let start = ContinuousClock.now
            var receiver: Socket?
            while receiver == nil, ContinuousClock.now - start < .seconds(10) {
                receiver = accepted.withLock { $0 }
                if receiver == nil { usleep(1000) }
            }
            let peer = try #require(receiver)
            defer { peer.close() }
            #expect(sender.unsentBytes == 0)
            // The peer reads nothing: send until the kernel takes no more.
            let chunk = [UInt8](repeating: 7, count: 64 * 1024)
            var total = 0
            while true {
                let sent = try sender.send(chunk, wait: false)
                if sent == 0 { break }
                total += sent
            }
            #expect((sender.unsentBytes ?? 0) > 0)
            // The peer takes it all: the queue empties.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
            defer { buffer.deallocate() }
            var read = 0
            while read < total { read += try peer.receive(into: buffer) }
            let drained = ContinuousClock.now
            while sender.unsentBytes != 0, ContinuousClock.now - drained < .seconds(10) { usleep(1000) }
            #expect(sender.unsentBytes == 0)
        }
    }
}
