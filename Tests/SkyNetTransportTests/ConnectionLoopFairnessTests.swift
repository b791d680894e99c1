import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// A connection whose peer floods it hands out `LoopReading.linesPerTurn` lines in a turn of
/// its loop, then lets the loop wait again: another connection of the same loop that becomes
/// readable meanwhile is served after those lines, not after the flood.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionLoopFairnessTests {
    @Test func aFloodedConnectionLetsAnotherOfItsLoopInAfterOneTurnOfLines() async throws {
        // Connections are given to the loops in turn: of five, two share a loop.
        var pairs: [(connection: Connection, peer: Socket)] = []
        defer { for pair in pairs { pair.connection.close(); pair.peer.close() } }
        let order = Locked<[String]>([])
        let allSeen = AsyncSignal<Void>()
        let flooded = Locked<(peer: Int32, other: Int32)?>(nil)
        for index in 0..<5 {
            let (server, client) = try await loopbackPair()
            let connection = Connection(stream: server, peer: "fair-\(index)")
            connection.start(onEvent: { event in
                guard case .line(let line) = event else { return }
                let text = String(decoding: line, as: UTF8.self)
                if order.withLock({ $0.append(text); return $0.count }) == 2001 { allSeen.fulfil(()) }
                // At the flood's first line, on the loop: the other connection's peer writes.
                if text == "flood-0", let other = flooded.withLock({ $0?.other }) {
                    _ = write(other, "other\n", 6)
                }
            })
            pairs.append((connection, client))
        }
        let loops = pairs.map(\.connection.eventLoop)
        let (first, second) = try #require((0..<5).lazy.flatMap { a in (a + 1..<5).lazy.map { (a, $0) } }
            .first { loops[$0.0] != nil && loops[$0.0] === loops[$0.1] })
        flooded.withLock { $0 = (pairs[first].peer.descriptor, pairs[second].peer.descriptor) }
        let flood = (0..<2000).map { "flood-\($0)\n" }.joined()
        #expect(write(pairs[first].peer.descriptor, flood, flood.utf8.count) == flood.utf8.count)
        await allSeen.value
        let seen = order.withLock { $0 }
        let other = try #require(seen.firstIndex(of: "other"))
        #expect(other <= 2 * LoopReading.linesPerTurn, "the other connection's line came after \(other) of the flood's")
    }
}
