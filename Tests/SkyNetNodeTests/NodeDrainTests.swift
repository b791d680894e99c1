import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A node that drains: it tells its clients, refuses new work as `busy "… is
/// draining"`, lets running tasks finish within the timeout, then cancels the rest.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeDrainTests {
    let nodeTests = NodeHarness()
    static let token = "drain-test-token-0123456789"

    func options(capacity: Int = 4) throws -> Node.Options {
        var options = nodeTests.options(capacity: capacity, token: Self.token)
        try DrainGate.register(in: &options.jobs)
        return options
    }

    /// A node stopped on every path; its log is printed when the test fails.
    func withNode(_ options: Node.Options, _ body: (Node) async throws -> Void) async throws {
        let lines = Locked<[String]>([])
        let node = try await Node.start(options) { line in lines.withLock { $0.append(line) } }
        do {
            try await body(node)
        } catch {
            await node.stop(grace: .seconds(1))
            Issue.record("node log: \(lines.withLock { $0 })")
            throw error
        }
        await node.stop(grace: .seconds(1))
    }

    /// Sends a held task of `gate` and returns its reply.
    func hold(_ peer: PeerConnection, _ gate: DrainGate, _ index: Int) async throws -> Reply {
        let id = peer.nextID()
        return try await peer.request(id: id, .run(id: id, task: gate.task(index)), timeout: .seconds(60))
    }

    @Test func tellsItsClientsRefusesNewWorkAndLetsRunningTasksFinish() async throws {
        let gate = try DrainGate.make(2)
        defer { gate.remove() }
        try await withNode(try options()) { node in
            let peer = try await nodeTests.connect(node, token: Self.token)
            defer { peer.close() }
            async let first = hold(peer, gate, 0)
            async let second = hold(peer, gate, 1)
            try await awaitState(upTo: .seconds(30)) { try await nodeTests.running(peer) == 2 }
            #expect(node.phase == .accepting)
            #expect(!peer.isDraining)

            let drain = Task { await node.drain(within: .seconds(60)) }
            let timeout = try await withTimeout(.seconds(30)) { await peer.draining.value }
            #expect(timeout == 60)
            #expect(peer.isDraining)
            #expect(node.phase == .draining)

            // New work is refused as a stopping node refuses it, naming the drain.
            let refused = try await nodeTests.scan(peer)
            guard case .failure(_, _, let code, let message) = refused else {
                Issue.record("expected busy, got \(refused)")
                return
            }
            #expect(code == .busy)
            #expect(message == "beta is draining")
            // Pings are still answered, and say so.
            let id = peer.nextID()
            guard case .pong(_, let pong) = try await peer.request(id: id, .ping(id: id), timeout: .seconds(10)) else {
                Issue.record("expected a pong")
                return
            }
            #expect(pong.draining)
            #expect(pong.running == 2)

            // The running tasks finish within the timeout: their results come, then the node stops.
            try await gate.release(0)
            try await gate.release(1)
            let replies = try await [first, second]
            for (index, reply) in replies.enumerated() {
                guard case .result(_, _, let result) = reply else {
                    Issue.record("task \(index): expected its result, got \(reply)")
                    continue
                }
                #expect(result == "released \(index)")
            }
            try await withTimeout(.seconds(30)) { await drain.value }
            #expect(node.phase == .stopped)
            _ = try await withTimeout(.seconds(30)) { await peer.closed.value }
        }
    }

    @Test func cancelsTheTasksStillRunningAtTheTimeoutThenCloses() async throws {
        let gate = try DrainGate.make(2)
        defer { gate.remove() }
        try await withNode(try options()) { node in
            let peer = try await nodeTests.connect(node, token: Self.token)
            defer { peer.close() }
            async let first = hold(peer, gate, 0)
            async let second = hold(peer, gate, 1)
            try await awaitState(upTo: .seconds(30)) { try await nodeTests.running(peer) == 2 }
            let started = ContinuousClock.now
            let drain = Task { await node.drain(within: .milliseconds(200)) }
            let replies = try await [first, second]
            for reply in replies {
                guard case .failure(_, _, let code, _) = reply else {
                    Issue.record("expected cancelled, got \(reply)")
                    continue
                }
                #expect(code == .cancelled)
            }
            try await withTimeout(.seconds(30)) { await drain.value }
            _ = try await withTimeout(.seconds(30)) { await peer.closed.value }
            #expect(peer.isDraining)
            // The job's kill grace is 2 s; `cat` ends on SIGTERM at once.
            #expect(ContinuousClock.now - started < .seconds(8))
            #expect(node.phase == .stopped)
            // The drain cancelled them: `cancelled` in the node's metrics, not `failed`.
            #expect(node.taskMetrics.count(job: "hold", outcome: .cancelled) == 2)
            #expect(node.taskMetrics.count(job: "hold", outcome: .failed) == 0)
            #expect(node.taskMetrics.count(job: "hold", outcome: .completed) == 0)
        }
    }

    @Test func aClientThatConnectsDuringTheDrainIsWelcomedToldAndGivenNoWork() async throws {
        let gate = try DrainGate.make(1)
        defer { gate.remove() }
        try await withNode(try options()) { node in
            let first = try await nodeTests.connect(node, token: Self.token)
            defer { first.close() }
            async let held = hold(first, gate, 0)
            try await awaitState(upTo: .seconds(30)) { try await nodeTests.running(first) == 1 }
            let drain = Task { await node.drain(within: .seconds(60)) }
            _ = try await withTimeout(.seconds(30)) { await first.draining.value }

            // `skynet status` or a coordinator redialling: welcomed, then told at once.
            let late = try await nodeTests.connect(node, token: Self.token)
            defer { late.close() }
            let left = try await withTimeout(.seconds(30)) { await late.draining.value }
            #expect(left > 50 && left <= 60)
            let id = late.nextID()
            guard case .pong(_, let pong) = try await late.request(id: id, .ping(id: id), timeout: .seconds(10)) else {
                Issue.record("expected a pong")
                return
            }
            #expect(pong.draining)
            let refused = try await nodeTests.scan(late)
            guard case .failure(_, _, .busy, "beta is draining") = refused else {
                Issue.record("expected busy, got \(refused)")
                return
            }
            try await gate.release(0)
            guard case .result = try await held else {
                Issue.record("the held task did not complete")
                return
            }
            try await withTimeout(.seconds(30)) { await drain.value }
        }
    }

    @Test func aDrainWithNothingRunningStopsAtOnceAndRefusesNewClients() async throws {
        try await withNode(try options()) { node in
            let peer = try await nodeTests.connect(node, token: Self.token)
            defer { peer.close() }
            let started = ContinuousClock.now
            let drained: Void? = await within(.seconds(10)) { await node.drain(within: .seconds(30)) }
            #expect(drained != nil, "the drain did not end")
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(await within(.seconds(10)) { await peer.draining.value } == 30, "no draining line")
            #expect(await within(.seconds(10)) { await peer.closed.value } != nil, "the link did not close")
            await #expect(throws: (any Error).self) { _ = try await nodeTests.connect(node, token: Self.token) }
        }
    }
}
