import Foundation
import Testing
@testable import SkyNet

/// A node in this process, spoken to over loopback.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct NodeTests {
    func startNode(capacity: Int = 4, token: String? = nil) async throws -> Node {
        var options = Node.Options(name: "beta")
        options.capacity = capacity
        options.failingEvery = 0
        options.token = token
        return try await Node.start(options)
    }

    func connect(_ node: Node, token: String? = nil) async throws -> PeerConnection {
        try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: token, timeout: .seconds(5))
    }

    func scan(_ peer: PeerConnection, id: Int? = nil, duration: Double = 0) async throws -> Reply {
        let id = id ?? peer.nextID()
        return try await peer.request(id: id, .scan(id: id, task: ScanTask(input: id, duration: duration)))
    }

    func running(_ peer: PeerConnection) async throws -> Int {
        let id = peer.nextID()
        guard case .pong(_, let pong) = try await peer.request(id: id, .ping(id: id)) else { return -1 }
        return pong.running
    }

    @Test func welcomesWithItsNameAndCapacity() async throws {
        let node = try await startNode(capacity: 3)
        let peer = try await connect(node)
        #expect(peer.welcome.name == "beta")
        #expect(peer.welcome.capacity == 3)
        peer.close()
        await node.stop()
    }

    @Test func saysBusyBeyondItsCapacityCountedOverAllConnections() async throws {
        let node = try await startNode(capacity: 2)
        let first = try await connect(node), second = try await connect(node)
        async let a = scan(first, duration: 0.5)
        async let b = scan(second, duration: 0.5)
        // Wait until both run, then a third request on either connection is refused at once.
        let deadline = ContinuousClock.now + .seconds(5)
        while try await running(first) < 2, ContinuousClock.now < deadline { await Task.yield() }
        let third = try await scan(first)
        guard case .failure(_, _, let code, _) = third else { Issue.record("expected busy, got \(third)"); return }
        #expect(code == "busy")
        let results = try await [a, b]
        #expect(results.allSatisfy { if case .result = $0 { true } else { false } })
        first.close(); second.close()
        await node.stop()
    }

    @Test func aTimedOutRequestIsCancelledOnTheNodeAndFreesTheSlot() async throws {
        let node = try await startNode(capacity: 1)
        let peer = try await connect(node)
        let remote = RemoteSystem(name: "beta", peer: peer, timeout: .milliseconds(200))
        await #expect(throws: TimeoutError.self) { try await remote.run(ScanTask(input: 1, duration: 30)) }
        let deadline = ContinuousClock.now + .seconds(5)
        while try await running(peer) > 0, ContinuousClock.now < deadline { await Task.yield() }
        #expect(try await running(peer) == 0)
        #expect(try await remote.run(ScanTask(input: 2, duration: 0)) == "2")
        peer.close()
        await node.stop()
    }

    /// The error carries the id, so (as the protocol says) it ends the request with that id.
    @Test func aDuplicateRequestIdInFlightIsABadRequest() async throws {
        let node = try await startNode()
        let peer = try await connect(node)
        let first = Task { try await scan(peer, id: 100, duration: 0.5) }
        try await Task.sleep(for: .milliseconds(100))
        peer.post(.scan(id: 100, task: ScanTask(input: 100, duration: 0)))
        await #expect(throws: WireError.badRequest("request id 100 is already in flight", id: 100)) {
            try await first.value
        }
        #expect(try await running(peer) == 1)  // the first scan still runs on the node
        peer.close()
        await node.stop()
    }

    @Test func aPingWithTheIdOfAScanInFlightIsABadRequest() async throws {
        let node = try await startNode()
        let peer = try await connect(node)
        let scan = Task { try await self.scan(peer, id: 7, duration: 0.5) }
        try await Task.sleep(for: .milliseconds(100))
        let reply = try await peer.request(id: 1007, .ping(id: 1007))
        guard case .pong = reply else { Issue.record("expected pong, got \(reply)"); return }
        peer.post(.ping(id: 7))  // the node's error carries id 7 and so ends the scan's wait
        await #expect(throws: WireError.badRequest("request id 7 is already in flight", id: 7)) { try await scan.value }
        peer.close()
        await node.stop()
    }

    @Test func aStoppingNodeRefusesNewScansAndFinishesRunningOnes() async throws {
        let node = try await startNode()
        let peer = try await connect(node)
        let running = Task { try await self.scan(peer, duration: 0.5) }
        try await Task.sleep(for: .milliseconds(100))
        let stopping = Task { await node.stop(grace: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        let refused = try await scan(peer)
        guard case .failure(_, _, let code, let message) = refused else { Issue.record("expected busy, got \(refused)"); return }
        #expect(code == "busy")
        #expect(message == "beta is stopping")
        guard case .result = try await running.value else { Issue.record("the running scan did not finish"); return }
        await stopping.value
    }

    @Test func pendingRequestsFailAtOnceWhenThePeerGoesAway() async throws {
        let node = try await startNode()
        let peer = try await connect(node)
        let clock = ContinuousClock(), start = clock.now
        let pending = Task { try await scan(peer, duration: 30) }
        try await Task.sleep(for: .milliseconds(100))
        await node.stop(grace: .zero)
        await #expect(throws: PeerDisconnected.self) { try await pending.value }
        #expect(clock.now - start < .seconds(10))
    }

    @Test func aNodeWithATokenRefusesAWrongOrMissingOne() async throws {
        let node = try await startNode(token: "open sesame")
        await #expect(throws: WireError(code: "unauthorized", message: "wrong or missing token")) {
            _ = try await connect(node, token: "guess")
        }
        await #expect(throws: WireError.self) { _ = try await connect(node) }
        let peer = try await connect(node, token: "open sesame")
        #expect(peer.welcome.name == "beta")
        peer.close()
        await node.stop()
    }

    @Test func constantTimeComparisonAgreesWithEquality() {
        for (a, b) in [("", ""), ("a", ""), ("", "a"), ("abc", "abc"), ("abc", "abd"), ("abcd", "abc")] {
            #expect(constantTimeEqual(a, b) == (a == b))
        }
    }
}

