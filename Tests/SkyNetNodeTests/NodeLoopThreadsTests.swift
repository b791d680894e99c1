import Foundation
import Testing
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// Links read on the process's event loops: a node and the coordinator links to it, both in
/// this process, start no thread per connection, and every link still answers.
@Suite(.timeLimit(.minutes(3)))
struct NodeLoopThreadsTests {
    let nodes = NodeHarness()

    @Test func aHundredAndFiftyLinksToANodeStartNoThreadPerConnection() async throws {
        // Both ends of every link are in this process: two descriptors a link. Not more: a
        // suite beside this one counts the process's descriptors.
        let links = min(150, (DescriptorLimit.raiseToMaximum() - 256) / 2)
        try #require(links >= 100, "too few descriptors for the test")
        var options = nodes.options()
        options.maxConnections = links + 10
        try await nodes.withNode(options) { node in
            // Eight handshakes at a time: the node lets one address have 16 under way at once.
            var peers: [PeerConnection] = []
            defer { for peer in peers { peer.close() } }
            for batch in stride(from: 0, to: links, by: 8) {
                peers += try await withThrowingTaskGroup(of: PeerConnection.self) { group in
                    for _ in batch..<min(links, batch + 8) { group.addTask { try await nodes.connect(node) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
                for peer in peers { group.addTask { try await nodes.running(peer) >= 0 } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(answered == links)
            // A reader thread per connection made 2 × links of them. Other suites run beside
            // this one (pipes keep reader threads), hence a bound rather than none.
            let names = threadNames()
            let readers = names.filter { $0.hasPrefix("skynet-reader") }.count
            #expect(readers < 50, "\(readers) reader threads for \(2 * links) connections")
            // (Threads started from a loop's thread carry its name until they name themselves.)
            #expect(names.filter { $0.hasPrefix("skynet-loop") }.count <= EventLoop.shared.count + 8)
        }
    }
}

extension NodeLoopThreadsTests {
    /// 48 clients from one address connect at once, each sending its hello at once (more than
    /// the 16 one address may have waiting for a hello): the node accepts them faster than it
    /// reads their hellos, and welcomes every one rather than pushing the young ones out.
    @Test func aBurstOfClientsFromOneAddressIsWelcomedWhole() async throws {
        try await nodes.withNode(nodes.options()) { node in
            let welcomed = try await onOwnThread(named: "test-burst") { () throws -> Int in
                var clients: [RawLines] = []
                defer { for client in clients { client.close() } }
                for index in 0..<48 {
                    let client = try RawLines(port: node.port)
                    try client.send(#"{"type":"hello","version":1,"name":"burst\#(index)"}"#)
                    clients.append(client)
                }
                var welcomed = 0
                for index in clients.indices where clients[index].readLine(silence: .seconds(20))?.contains(#""welcome""#) == true {
                    welcomed += 1
                }
                return welcomed
            }
            #expect(welcomed == 48)
        }
    }
}
