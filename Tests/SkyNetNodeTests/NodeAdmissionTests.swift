import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransport
#if canImport(Glibc)
import Glibc
import SkyNetTestSupport
#endif

/// Silent sockets from many addresses, reconnecting as soon as the node closes them, against a
/// real client that takes its time over the proof: a connection that has
/// sent a valid hello is never pushed out by a silent one.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeAdmissionTests {
    let auth = AuthHandshakeTests()

    /// `perAddress` silent sockets from each of `addresses`, each reconnected as soon as the
    /// node closes it, until `stop`: one thread per address, polling its sockets.
    final class SilentFlood: Sendable {
        private let stopped = Locked(false)
        private let open = Locked(0)
        let reconnects = Counter()
        private let done: [Flag]

        init(port: Int, addresses: [String], perAddress: Int) {
            done = addresses.map { _ in Flag() }
            for (address, done) in zip(addresses, done) {
                startThread(named: "test-flood") { [self] in
                    var sockets = (0..<perAddress).compactMap { _ in try? connectFrom(address, toPort: port) }
                    open.withLock { $0 += sockets.count }
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
                    defer { buffer.deallocate() }
                    while !stopped.withLock({ $0 }) {
                        var polled = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
                        guard poll(&polled, nfds_t(polled.count), 10) > 0 else { continue }
                        var gone: [Int] = []
                        for (index, entry) in polled.enumerated() where entry.revents != 0 {
                            let count = recv(entry.fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                            guard count <= 0 else { continue }  // the node sent something: still open
                            sockets[index].close()
                            if let again = try? connectFrom(address, toPort: port) {
                                sockets[index] = again
                                reconnects.increment()
                            } else {
                                gone.append(index)
                            }
                        }
                        // Never polled or closed again: its number may already be another test's socket.
                        for index in gone.reversed() { sockets.remove(at: index) }
                    }
                    for socket in sockets { socket.close() }
                    done.set()
                }
            }
        }

        var opened: Int { open.withLock { $0 } }

        func stop() async throws {
            stopped.withLock { $0 = true }
            for flag in done { try await flag.wait(upTo: .seconds(10)) }
        }
    }

    /// 16 silent sockets from each of 127.0.0.2 to 127.0.0.5, reconnected when closed, fill the
    /// budget of connections without a hello; a client from 127.0.0.1 that takes 50 ms over its
    /// proof logs in every time, 10 of 10.
    @Test func aClientInItsHandshakeIsNeverPushedOutBySilentSockets() async throws {
        try await auth.withTokenNode { node, log in
            let flood = SilentFlood(port: node.port, addresses: (2...5).map { "127.0.0.\($0)" }, perAddress: 16)
            do {
                try await awaitState { flood.opened == 64 && node.connectionCount >= 64 }
                let before = flood.reconnects.value
                var outcomes: [String] = []
                for round in 1...10 {
                    do {
                        let welcome = try await onOwnThread(named: "test-slow-proof") { () throws -> String in
                            var client = try RawLines(port: node.port)
                            defer { client.close() }
                            return try auth.handshake(&client, name: "slow\(round)", thinking: .milliseconds(50)).welcome
                        }
                        outcomes.append(jsonFields(welcome)?["type"] as? String ?? welcome)
                    } catch {
                        outcomes.append("\(error)")
                    }
                }
                let churn = flood.reconnects.value - before
                try await flood.stop()
                #expect(outcomes == Array(repeating: "welcome", count: 10), "\(outcomes)")
                // The attack was real: the node kept closing silent sockets to make room.
                #expect(churn >= 10, "only \(churn) silent sockets were pushed out")
                #expect(log.matching("[Node] Connected: slow").count == 10)
            } catch {
                try? await flood.stop()
                throw error
            }
        }
    }
}
