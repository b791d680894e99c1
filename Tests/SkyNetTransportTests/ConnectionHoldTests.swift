import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// `Connection.holdReading(for:then:)`, on an event loop (a TCP socket) and on a reader thread
/// (a pair of descriptors): the lines after a hold are handed out after its continuation, in
/// order; a hold asked again from the continuation holds before them; a connection that ends
/// during a hold runs the continuation with false at once.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionHoldTests {
    enum Kind: CaseIterable { case tcp, pair }

    /// A connection of `kind` and the raw descriptor of its peer (with what closes it).
    func link(_ kind: Kind) async throws -> (stream: any ByteStream, peer: Int32, close: @Sendable () -> Void) {
        switch kind {
        case .tcp:
            let (server, client) = try await loopbackPair()
            return (server, client.descriptor, { client.close() })
        case .pair:
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { throw SocketError("socketpair") }
            let peer = ends[1]
            return (try DescriptorPair(reading: ends[0], writing: ends[0]), peer, { close(peer) })
        }
    }

    @Test(arguments: Kind.allCases)
    func linesAfterAHoldComeAfterItsContinuationsInOrder(kind: Kind) async throws {
        let (stream, peer, closePeer) = try await link(kind)
        defer { closePeer() }
        let seen = Watched<[String]>([])
        let connection = Connection(stream: stream, peer: "hold")
        defer { connection.close() }
        connection.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            let text = String(decoding: line, as: UTF8.self)
            seen.update { $0.append(text) }
            guard text == "a" else { return }
            connection.holdReading(for: .milliseconds(50)) { open in
                seen.update { $0.append("then1 \(open)") }
                connection.holdReading(for: .milliseconds(50)) { open in seen.update { $0.append("then2 \(open)") } }
            }
        })
        #expect(write(peer, "a\nb\nc\n", 6) == 6)
        try await seen.wait(upTo: .seconds(20)) { $0.count == 5 }
        #expect(seen.value == ["a", "then1 true", "then2 true", "b", "c"])
    }

    @Test(arguments: Kind.allCases)
    func aConnectionClosedDuringAHoldRunsItsContinuationWithFalseAtOnce(kind: Kind) async throws {
        let (stream, peer, closePeer) = try await link(kind)
        defer { closePeer() }
        let seen = Watched<[String]>([])
        let connection = Connection(stream: stream, peer: "hold")
        connection.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            seen.update { $0.append(String(decoding: line, as: UTF8.self)) }
            connection.holdReading(for: .seconds(60)) { open in seen.update { $0.append("then \(open)") } }
        })
        #expect(write(peer, "a\nb\n", 4) == 4)
        try await seen.wait(upTo: .seconds(20)) { $0 == ["a"] }
        connection.close()
        try await seen.wait(upTo: .seconds(20)) { $0.count >= 2 }
        _ = await connection.closed.value
        // (A reader thread may still hand out the line it had read, and its hold ends at once.)
        #expect(Array(seen.value.prefix(2)) == ["a", "then false"])
        #expect(!seen.value.contains("then true"))
    }
}
