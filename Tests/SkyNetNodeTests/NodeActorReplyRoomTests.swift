import Distributed
import Foundation
import Testing
@testable import SkyNetActors
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// A window of calls answered with large results while the client does not read: the node's
/// replies wait for room in its queue rather than ending the link, and every one arrives once
/// the client reads.
@Suite(.timeLimit(.minutes(2)))
struct NodeActorReplyRoomTests {
    let nodes = NodeHarness()

    distributed actor Bulk {
        typealias ActorSystem = ClusterActorSystem
        let answered: SkyNetTestSupport.Counter

        init(answered: SkyNetTestSupport.Counter, actorSystem: ClusterActorSystem) {
            self.answered = answered
            self.actorSystem = actorSystem
        }

        distributed func text(of bytes: Int) -> String {
            answered.increment()
            return String(repeating: "r", count: bytes)
        }

        /// Runs until cancelled.
        distributed func hold() async throws {
            try await Task.sleep(for: .seconds(3600))
        }
    }

    /// A system "beta" hosting a `Bulk`, and the count of its answers.
    private func bulkHost() -> (ClusterActorSystem, Bulk, SkyNetTestSupport.Counter) {
        let host = ClusterActorSystem(name: "beta")
        let answered = SkyNetTestSupport.Counter()
        return (host, Bulk(answered: answered, actorSystem: host), answered)
    }

    /// The line of `call` as our system writes it, with the compiler's target.
    private func line(of call: @Sendable (Bulk) async throws -> Void, for actor: Bulk, on host: ClusterActorSystem) async throws -> ActorCall {
        let caller = ClusterActorSystem(name: "caller"), capture = AuthHandshakeTests.CapturingChannel()
        caller.connect(to: host.name, through: capture)
        // (The capture answers 0, which a String or Void may not decode from.)
        try? await call(try Bulk.resolve(id: actor.id, using: caller))
        return try #require(capture.captured.first)
    }

    /// A client connected, welcomed, that has sent `lines` and reads nothing.
    private func silentClient(of node: Node, sending lines: [[UInt8]]) async throws -> RawLines {
        try await onOwnThread(named: "test-bulk") { () throws -> RawLines in
            var client = try RawLines(port: node.port)
            try client.send(#"{"type":"hello","version":1,"name":"slow"}"#)
            guard client.readLine()?.contains(#""welcome""#) == true else { throw Refused() }
            for line in lines { try client.send(bytes: line) }
            return client
        }
    }

    @Test func repliesToAClientThatDoesNotReadWaitForRoomAndAllArrive() async throws {
        let (host, actor, answered) = bulkHost()
        let call = try await line(of: { _ = try await $0.text(of: 256 << 10) }, for: actor, on: host)
        var options = nodes.options()
        options.actors = host
        // 60 results of 256 KiB: 15 MiB, past the 8 MiB a node queues for one client.
        let calls = 60
        try await nodes.withNode(options) { node in
            let client = try await silentClient(of: node, sending: (1...calls).map { call.line(id: $0) })
            defer { client.close() }
            try await awaitState(upTo: .seconds(60)) { answered.value == calls }
            // Every result is made; a moment more lets the replies pile up behind a client
            // that reads late, as they would on a slow network.
            try await Task.sleep(for: .milliseconds(300))
            let (lines, closed) = try await onOwnThread(named: "test-bulk") { () -> ([String], Bool) in
                var client = client
                var lines: [String] = []
                while lines.count < calls, let line = client.readLine(silence: .seconds(20)) { lines.append(line) }
                return (lines, client.closed)
            }
            #expect(lines.count == calls && !closed, "\(lines.count) replies, then the link \(closed ? "ended" : "went quiet")")
            let ids = Set(lines.compactMap { jsonFields($0).flatMap { $0["type"] as? String == "returned" ? $0["id"] as? Int : nil } })
            #expect(ids == Set(1...calls))
        }
        _ = actor
    }

    /// A client that lets a reply wait for room for the idle bound does not read: the node ends
    /// its link, even while another of its calls runs (which keeps the idle check away).
    @Test func aReplyThatWaitsForRoomPastTheIdleBoundEndsTheLink() async throws {
        let (host, actor, answered) = bulkHost()
        let hold = try await line(of: { try await $0.hold() }, for: actor, on: host)
        let bulk = try await line(of: { _ = try await $0.text(of: 256 << 10) }, for: actor, on: host)
        var options = nodes.options()
        options.actors = host
        options.idleTimeout = .seconds(1)
        try await nodes.withNode(options) { node in
            let client = try await silentClient(of: node, sending: [hold.line(id: 1)] + (2...41).map { bulk.line(id: $0) })
            defer { client.close() }
            try await awaitState(upTo: .seconds(60)) { answered.value == 40 }
            // Reads nothing until the node has had the idle bound, and more, to end the link.
            try await Task.sleep(for: .seconds(3))
            let closed = try await onOwnThread(named: "test-bulk") { () -> Bool in
                var client = client
                _ = client.readToEnd(silence: .seconds(20))
                return client.closed
            }
            #expect(closed, "the link to a client that reads nothing stayed open")
        }
        _ = actor
    }

    /// Replies waiting for a client count among the node's bytes for calls: one that would take
    /// the node past them ends that client's link (its client asked for more than it reads).
    @Test func repliesWaitingPastTheNodesBytesForCallsEndTheLink() async throws {
        let (host, actor, answered) = bulkHost()
        let bulk = try await line(of: { _ = try await $0.text(of: 256 << 10) }, for: actor, on: host)
        var options = nodes.options()
        options.actors = host
        options.maxCallBytes = 2 << 20
        try await nodes.withNode(options) { node in
            // 120 × 256 KiB: 4 MiB may queue (and some more in the kernel), 2 MiB may wait;
            // the rest cannot.
            let client = try await silentClient(of: node, sending: (1...120).map { bulk.line(id: $0) })
            defer { client.close() }
            // Until every call ran, or the node ended the link first (cancelling the rest).
            try await awaitState(upTo: .seconds(60)) { answered.value == 120 || node.connectionCount == 0 }
            let (lines, closed) = try await onOwnThread(named: "test-bulk") { () -> (Int, Bool) in
                var client = client
                return (client.readToEnd(silence: .seconds(20)).count, client.closed)
            }
            #expect(closed && lines < 120, "\(lines) replies; the link \(closed ? "ended" : "stayed")")
            // Every call's bytes, and every waiting reply's, are given back.
            try await awaitState(upTo: .seconds(60)) { node.callBytes.withLock { $0 } == 0 }
        }
        _ = actor
    }

    struct Refused: Error {}
}
