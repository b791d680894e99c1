import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A node in this process, spoken to over loopback.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeTests: NodeTesting {
    @Test func welcomesWithItsNameAndCapacity() async throws {
        try await withNode(capacity: 3) { node in
            let peer = try await connect(node)
            defer { peer.close() }
            #expect(peer.welcome.name == "beta")
            #expect(peer.welcome.capacity == 3)
        }
    }

    @Test func saysBusyBeyondItsCapacityCountedOverAllConnections() async throws {
        try await withNode(capacity: 2) { node in
            let first = try await connect(node), second = try await connect(node)
            defer { first.close(); second.close() }
            // 5 s each: long enough that both still run when the third comes, on a loaded
            // machine too (at a load average of 25, 0.5 s had passed before it came).
            async let a = scan(first, duration: 5)
            async let b = scan(second, duration: 5)
            // Wait until both run, then a third request on either connection is refused at once.
            try await awaitState(upTo: .seconds(5)) { try await running(first) == 2 }
            let third = try await scan(first)
            guard case .failure(_, _, let code, _) = third else { Issue.record("expected busy, got \(third)"); return }
            #expect(code == "busy")
            let results = try await [a, b]
            #expect(results.allSatisfy { if case .result = $0 { true } else { false } })
        }
    }

    @Test func aTimedOutRequestIsCancelledOnTheNodeAndFreesTheSlot() async throws {
        try await withNode(capacity: 1) { node in
            let peer = try await connect(node)
            defer { peer.close() }
            let remote = RemoteSystem(name: "beta", peer: peer, timeout: .milliseconds(200))
            await #expect(throws: TimeoutError.self) { try await remote.run(ScanTask(input: 1, duration: 30)) }
            try await awaitState(upTo: .seconds(5)) { try await running(peer) == 0 }
            // The slot is free: the next scan is run, not refused busy. (Asked with a time limit
            // of its own: 200 ms also timed out a scan of no duration in a loaded run.)
            let patient = RemoteSystem(name: "beta", peer: peer, timeout: .seconds(30))
            #expect(try await patient.run(ScanTask(input: 2, duration: 0)) == "2")
        }
    }

    /// The error carries the id, so (as the protocol says) it ends the request with that id.
    @Test func aDuplicateRequestIdInFlightIsABadRequest() async throws {
        try await withNode { node in
            let peer = try await connect(node)
            defer { peer.close() }
            // Long enough that it still runs at the last check however loaded the machine (1 s
            // was not, under the thread sanitizer beside five builds); the node's stop ends it.
            let first = Task { try await scan(peer, id: 100, duration: 600) }
            try await awaitState(upTo: .seconds(5)) { try await running(peer) == 1 }
            peer.post(.scan(id: 100, task: ScanTask(input: 100, duration: 0)))
            await #expect(throws: WireError.badRequest("request id 100 is already in flight", id: 100)) {
                try await first.value
            }
            #expect(try await running(peer) == 1)  // the first scan still runs on the node
        }
    }

    @Test func aPingWithTheIdOfAScanInFlightIsABadRequest() async throws {
        try await withNode { node in
            let peer = try await connect(node)
            defer { peer.close() }
            // Still running when the ping arrives however loaded the machine (1 s was not, under
            // the thread sanitizer); the node's error ends the wait, the node's stop the scan.
            let scan = Task { try await self.scan(peer, id: 7, duration: 600) }
            try await awaitState(upTo: .seconds(5)) { try await running(peer) == 1 }
            peer.post(.ping(id: 7))  // the node's error carries id 7 and so ends the scan's wait
            await #expect(throws: WireError.badRequest("request id 7 is already in flight", id: 7)) { try await scan.value }
        }
    }

    @Test func aStoppingNodeRefusesNewScansAndFinishesRunningOnes() async throws {
        // The running task is held until the refusal has come: a timed one ended, and the stop
        // closed the link, before a starved test sent its next scan.
        let gate = try DrainGate.make(1)
        defer { gate.remove() }
        var options = options()
        try DrainGate.register(in: &options.jobs)
        try await withNode(options) { node in
            let peer = try await connect(node)
            defer { peer.close() }
            let running = Task {
                let id = peer.nextID()
                return try await peer.request(id: id, .run(id: id, task: gate.task(0)), timeout: .seconds(60))
            }
            try await awaitState(upTo: .seconds(30)) { try await self.running(peer) == 1 }
            let stopping = Task { await node.stop(grace: .seconds(60)) }
            try await awaitState(upTo: .seconds(30)) { node.isStopping }
            let refused = try await scan(peer)
            guard case .failure(_, _, let code, let message) = refused else { Issue.record("expected busy, got \(refused)"); return }
            #expect(code == "busy")
            #expect(message == "beta is stopping")
            try await gate.release(0)
            guard case .result(_, _, "released 0") = try await running.value else { Issue.record("the running task did not finish"); return }
            await stopping.value
        }
    }

    @Test func pendingRequestsFailAtOnceWhenThePeerGoesAway() async throws {
        try await withNode { node in
            let peer = try await connect(node)
            let clock = ContinuousClock(), start = clock.now
            let pending = Task { try await scan(peer, duration: 30) }
            try await awaitState(upTo: .seconds(5)) { try await running(peer) == 1 }
            await node.stop(grace: .zero)
            await #expect(throws: PeerDisconnected.self) { try await pending.value }
            #expect(clock.now - start < .seconds(10))
        }
    }

    @Test func aNodeWithATokenRefusesAWrongOrMissingOne() async throws {
        try await withNode(token: "open sesame") { node in
            await #expect(throws: WireError(code: "unauthorized", message: "wrong token (the handshake does not open)")) {
                _ = try await connect(node, token: "guess")
            }
            await #expect(throws: WireError.self) { _ = try await connect(node) }
            let peer = try await connect(node, token: "open sesame")
            defer { peer.close() }
            #expect(peer.welcome.name == "beta")
        }
    }
}

