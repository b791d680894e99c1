import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// `Socket.dial` waits for its connections on the event loops: dials that hang hold no thread
/// each, end at their deadline, and a refused one says so.
@Suite(.timeLimit(.minutes(1)))
struct SocketDialTests {
    @Test func twoHundredHangingDialsHoldNoThreadEachAndEndAtTheirDeadline() async throws {
        // A listener that never accepts, with a backlog of one: once its queue is full, the
        // kernel drops further SYNs and those connects hang.
        let listening = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 1)
        defer { listening.close() }
        let port = try listening.localAddress().port
        let started = ContinuousClock.now
        let (connected, timedOut, mostThreads) = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<200 {
                group.addTask { () throws -> Int32 in
                    do {
                        let socket = try await Socket.dial(host: "127.0.0.1", port: port, timeout: .seconds(2))
                        socket.close()
                        return 0
                    } catch let error as SocketError {
                        return error.code
                    }
                }
            }
            // Looked at for the first half second, while the dials hang: the threads that could
            // be dialing.
            let mostThreads = Locked(0)
            try await awaitState(upTo: .seconds(5)) {
                let dialing = threadNames().filter { $0.hasPrefix("skynet-resolve") || $0.hasPrefix("skynet-blocking") }.count
                mostThreads.withLock { $0 = max($0, dialing) }
                return ContinuousClock.now - started > .milliseconds(500)
            }
            var connected = 0, timedOut = 0
            for try await code in group {
                if code == 0 { connected += 1 } else if code == ETIMEDOUT { timedOut += 1 }
            }
            return (connected, timedOut, mostThreads.withLock { $0 })
        }
        let took = ContinuousClock.now - started
        #expect(connected + timedOut == 200)
        #expect(timedOut >= 190, "the listener's queue holds a few; the rest wait until their deadline")
        // Ended by their deadline, not hanging: the upper bound is loose because the unit tests'
        // opening burst can keep two cores' pool busy for seconds (10 s was missed there).
        #expect(took >= .milliseconds(1900) && took < .seconds(30))
        // A thread per dial would be 200; a numeric address is not even looked up (the two
        // pools have at most 4 + 8 threads, shared with the tests that run beside this one).
        #expect(mostThreads <= 12)
    }

    @Test func aDialToAPortNobodyListensOnIsRefused() async throws {
        // Bound and kept, never listening: the kernel refuses connects to it, and no test beside
        // this one can listen on it meanwhile (a port closed before the dial once was).
        let bound = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(bound >= 0)
        defer { close(bound) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(bound, $0, length) == 0 && getsockname(bound, $0, &length) == 0 }
        }
        try #require(named)
        let port = Int(UInt16(bigEndian: address.sin_port))
        await #expect(throws: SocketError.self) { try await Socket.dial(host: "127.0.0.1", port: port, timeout: .seconds(5)) }
        do {
            _ = try await Socket.dial(host: "127.0.0.1", port: port, timeout: .seconds(5))
        } catch {
            #expect(error.code == ECONNREFUSED)
            #expect(error.description.contains("127.0.0.1:\(port)"))
        }
    }

    @Test func aNameIsLookedUpAndTheConnectionCarriesBytes() async throws {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        let accepted = AsyncSignal<Socket>()
        try listener.start { socket, _ in accepted.fulfil(socket) }
        defer { listener.stop() }
        let socket = try await Socket.dial(host: "localhost", port: listener.port, timeout: .seconds(5))
        defer { socket.close() }
        let server = await accepted.value
        defer { server.close() }
        let sent = try [UInt8]("hello\n".utf8).withUnsafeBytes { try socket.send($0, wait: true) }
        #expect(sent == 6)
        let received = try await onOwnThread(named: "test-receive") { () throws -> [UInt8] in
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
            return Array(buffer.prefix(count))
        }
        #expect(received == Array("hello\n".utf8))
    }
}
