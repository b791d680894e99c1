import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// Listeners take their connections on the process's event loops: many of them start no
/// thread of their own, each takes what comes to it, and a stopped one closes its socket.
@Suite(.timeLimit(.minutes(1)))
struct ListenerTests {
    @Test func fortyListenersTakeTheirConnectionsWithoutAThreadEach() async throws {
        var listeners: [Listener] = []
        for _ in 0..<40 { listeners.append(try await Listener.bind(host: "127.0.0.1", port: 0)) }
        let accepted = Locked<[Int: Socket]>([:])
        for (index, listener) in listeners.enumerated() {
            try listener.start { socket, _ in accepted.withLock { $0[index] = socket } }
        }
        let ports = listeners.map(\.port)
        let clients = try await onOwnThread(named: "test-connect") {
            try ports.map { try Socket.connect(host: "127.0.0.1", port: $0, timeout: .seconds(5)) }
        }
        try await awaitState(upTo: .seconds(20)) { accepted.withLock { $0.count } == 40 }
        // No thread of a listener's own (an accept thread each was 40), and the loops the
        // process shares, each started once.
        let names = threadNames()
        #expect(!names.isEmpty)
        #expect(names.filter { $0.hasPrefix("skynet-accept") }.isEmpty)
        // (Threads started from a loop's thread carry its name until they name themselves.)
        #expect(names.filter { $0.hasPrefix("skynet-loop") }.count <= EventLoop.shared.count + 8)
        for listener in listeners { listener.stop() }
        for listener in listeners { await listener.stopped.value }
        let refused = try await onOwnThread(named: "test-connect") {
            ports.filter { (try? Socket.connect(host: "127.0.0.1", port: $0, timeout: .seconds(5))) == nil }.count
        }
        #expect(refused == 40)
        for client in clients { client.close() }
        for socket in accepted.withLock({ $0.values }) { socket.close() }
    }

    @Test func aListenerStoppedBeforeItStartedClosesItsSocket() async throws {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        listener.stop()
        await listener.stopped.value
        let port = listener.port
        let connected = try await onOwnThread(named: "test-connect") {
            (try? Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))) != nil
        }
        #expect(!connected)
    }
}
