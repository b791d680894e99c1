import Distributed
import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetActors
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport

/// Calls of distributed actors over a real TCP link: a node hosts the actors of its system,
/// a coordinator's system calls them through its `PeerConnection`.
@Suite(.timeLimit(.minutes(2)))
struct ActorCallLinkTests {
    let nodes = NodeHarness()

    distributed actor LinkedGreeter {
        typealias ActorSystem = ClusterActorSystem
        /// How many `hold` calls began, and how many were cancelled.
        let started: Counter
        let cancelled: Counter

        init(actorSystem: ClusterActorSystem, started: Counter = Counter(), cancelled: Counter = Counter()) {
            self.actorSystem = actorSystem
            self.started = started
            self.cancelled = cancelled
        }

        distributed func greet(_ name: String) -> String { "hello \(name)" }
        distributed func length(_ text: String) -> Int { text.utf8.count }
        distributed func half(_ number: Int?) -> Int? { number.flatMap { $0.isMultiple(of: 2) ? $0 / 2 : nil } }

        /// Holds `text` until cancelled.
        distributed func holdOnto(_ text: String) async throws -> Int {
            try await hold() + text.count
        }

        /// Runs until cancelled.
        distributed func hold() async throws -> Int {
            started.increment()
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                cancelled.increment()
                throw error
            }
            return 0
        }
    }

    /// A node hosting `beta`'s actors, a link to it, and a system `alpha` calling through it.
    func withLinkedSystems(_ body: (ClusterActorSystem, ClusterActorSystem, Node, PeerConnection) async throws -> Void) async throws {
        let beta = ClusterActorSystem(name: "beta")
        var options = nodes.options()
        options.actors = beta
        try await nodes.withNode(options) { node in
            let peer = try await nodes.connect(node)
            defer { peer.close() }
            let alpha = ClusterActorSystem(name: "alpha")
            alpha.connect(to: "beta", through: peer)
            try await body(alpha, beta, node, peer)
        }
    }

    @Test func aCallTravelsToTheNodeThatHostsTheActorAndBack() async throws {
        try await withLinkedSystems { alpha, beta, _, _ in
            let greeter = LinkedGreeter(actorSystem: beta)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            #expect(try await remote.greet("ada") == "hello ada")
            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<50 { group.addTask { try await remote.greet("\(index)") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results) == Set((0..<50).map { "hello \($0)" }))
            // nil travels as null and comes back nil, not as "returned nothing".
            #expect(try await remote.half(8) == 4)
            #expect(try await remote.half(7) == nil)
            #expect(try await remote.half(nil) == nil)
            let gone = try LinkedGreeter.resolve(id: ClusterActorID(system: "beta", number: 999), using: alpha)
            await #expect(throws: ClusterActorSystemError.actorNotFound(ClusterActorID(system: "beta", number: 999))) {
                try await gone.greet("nobody")
            }
        }
    }

    /// When the link ends, every call in flight on it fails at once, not at a timeout.
    @Test func callsInFlightFailAtOnceWhenTheLinkEnds() async throws {
        try await withLinkedSystems { alpha, beta, _, peer in
            let started = Counter()
            let greeter = LinkedGreeter(actorSystem: beta, started: started)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            let calls = (0..<20).map { _ in Task { try await remote.hold() } }
            try await awaitState(upTo: .seconds(60)) { started.value == 20 }
            let clock = ContinuousClock(), closed = clock.now
            peer.close()
            var failures = 0
            for call in calls {
                do { _ = try await call.value } catch { failures += 1 }
            }
            #expect(failures == 20)
            #expect(clock.now - closed < .seconds(10), "the calls failed \(clock.now - closed) after the link closed")
        }
    }

    /// Cancelling the caller's task cancels the method running on the node.
    @Test func aCallersCancellationReachesTheNode() async throws {
        try await withLinkedSystems { alpha, beta, _, _ in
            let started = Counter(), cancelled = Counter()
            let greeter = LinkedGreeter(actorSystem: beta, started: started, cancelled: cancelled)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            let call = Task { try await remote.hold() }
            try await awaitState(upTo: .seconds(60)) { started.value == 1 }
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            try await awaitState(upTo: .seconds(60)) { cancelled.value == 1 }
            #expect(try await remote.greet("after") == "hello after")  // the link goes on
        }
    }

    /// A connection runs at most `Node.maxCallsPerConnection` calls at once: one more is refused
    /// `busy` and never runs.
    /// The caller keeps a call past the connection's bound waiting (here until its deadline);
    /// the node refuses one that another client sends past the bound.
    @Test func callsBeyondTheConnectionsBoundWaitAtTheCallerAndTheNodeRefusesMore() async throws {
        try await withLinkedSystems { alpha, beta, _, peer in
            let started = Counter()
            let greeter = LinkedGreeter(actorSystem: beta, started: started)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            let calls = (0..<Node.maxCallsPerConnection).map { _ in Task { try await remote.hold() } }
            defer { for call in calls { call.cancel() } }
            try await awaitState(upTo: .seconds(60)) { started.value == Node.maxCallsPerConnection }
            await #expect(throws: ClusterActorSystemError.deadline(.milliseconds(300))) {
                try await ClusterActorSystem.withCallOptions(CallOptions(timeout: .milliseconds(300))) { try await remote.hold() }
            }
            let reply = try await peer.call(ActorCall(actor: greeter.id, target: "past-the-bound", arguments: []), timeout: .seconds(30))
            guard case .refused(.refused(let code, _)) = reply else {
                Issue.record("the call past the bound was \(reply)")
                return
            }
            #expect(code == "busy" && started.value == Node.maxCallsPerConnection)
        }
    }

    /// A call too large for a line is refused before it is sent: the link, and the calls on
    /// it, live on.
    @Test func aCallTooLargeForALineFailsAloneAndTheLinkStays() async throws {
        try await withLinkedSystems { alpha, beta, _, peer in
            let greeter = LinkedGreeter(actorSystem: beta)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            do {
                _ = try await remote.greet(String(repeating: "x", count: 2 << 20))
                Issue.record("a call of 2 MiB was sent")
            } catch ClusterActorSystemError.badValue(let reason) {
                #expect(reason.contains("more than a line holds"), "\(reason)")
            }
            #expect(try await remote.greet("ada") == "hello ada")
            #expect(peer.closed.current == nil)
        }
    }

    /// A window of calls whose arguments together pass the caller's queue to the node (8 MiB):
    /// the calls wait for room at the caller rather than ending the link, and every one runs.
    @Test func aWindowOfLargeArgumentsWaitsForRoomAndTheLinkStays() async throws {
        try await withLinkedSystems { alpha, beta, _, peer in
            let greeter = LinkedGreeter(actorSystem: beta)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            let argument = String(repeating: "a", count: 256 << 10)
            let lengths = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<120 { group.addTask { try await remote.length(argument) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(lengths == Array(repeating: 256 << 10, count: 120))
            #expect(peer.closed.current == nil)
        }
    }

    /// The node holds at most `maxCallBytes` of call lines in flight: a call past it is
    /// refused `busy` and runs nothing; once the others end, calls run again.
    @Test func callsPastTheNodesByteBudgetAreRefusedBusy() async throws {
        let beta = ClusterActorSystem(name: "beta")
        var options = nodes.options()
        options.actors = beta
        options.maxCallBytes = 64 << 10
        try await nodes.withNode(options) { node in
            let peer = try await nodes.connect(node)
            defer { peer.close() }
            let alpha = ClusterActorSystem(name: "alpha")
            alpha.connect(to: "beta", through: peer)
            let started = Counter(), cancelled = Counter()
            let greeter = LinkedGreeter(actorSystem: beta, started: started, cancelled: cancelled)
            let remote = try LinkedGreeter.resolve(id: greeter.id, using: alpha)
            // Three calls of 20 KiB fit in 64 KiB; the fourth does not.
            let held = (0..<3).map { _ in Task { try await remote.holdOnto(String(repeating: "x", count: 20 << 10)) } }
            try await awaitState(upTo: .seconds(60)) { started.value == 3 }
            do {
                _ = try await remote.holdOnto(String(repeating: "y", count: 20 << 10))
                Issue.record("a call past the byte budget ran")
            } catch ClusterActorSystemError.refused(let code, let message) {
                #expect(code == "busy" && message.contains("bytes"), "\(message)")
            }
            #expect(started.value == 3)
            for call in held { call.cancel() }
            try await awaitState(upTo: .seconds(60)) { cancelled.value == 3 }
            #expect(try await remote.greet("again") == "hello again")
        }
    }

    distributed actor Gate {
        typealias ActorSystem = ClusterActorSystem
        let opened: AsyncSignal<Void>
        let started: Counter

        init(opened: AsyncSignal<Void>, started: Counter, actorSystem: ClusterActorSystem) {
            self.opened = opened
            self.started = started
            self.actorSystem = actorSystem
        }

        distributed func pass(_ number: Int) async -> Int {
            started.increment()
            await opened.value
            return number
        }
    }

    /// 10,000 calls made at once against an actor that holds each: a window travels, the rest wait
    /// at the caller without a byte sent for them; once it lets them through, each runs once.
    @Test func tenThousandCallsAgainstASlowActorWaitAtTheCallerAndEachRunsOnce() async throws {
        try await withLinkedSystems { alpha, beta, _, peer in
            let opened = AsyncSignal<Void>(), started = Counter()
            let gate = Gate(opened: opened, started: started, actorSystem: beta)
            let remote = try Gate.resolve(id: gate.id, using: alpha)
            let sentBefore = peer.connection.sentBytes.load(ordering: .relaxed)
            let total = 10_000
            let sum = Locked(0)
            let calls = Task {
                try await withThrowingDiscardingTaskGroup { group in
                    for number in 0..<total { group.addTask { let value = try await remote.pass(number); sum.withLock { $0 += value } } }
                }
            }
            try await awaitState(upTo: .seconds(60)) { started.value == Node.maxCallsPerConnection }
            try await awaitState(upTo: .seconds(60)) {
                alpha.state.withLock { $0.links["beta"]?.waiting.count } == total - Node.maxCallsPerConnection
            }
            let sent = peer.connection.sentBytes.load(ordering: .relaxed) - sentBefore
            // A call's line is about 150 bytes: the waiting calls sent none.
            #expect(sent < Node.maxCallsPerConnection * 400, "\(sent) bytes went out for \(Node.maxCallsPerConnection) calls")
            #expect(started.value == Node.maxCallsPerConnection)
            opened.fulfil(())
            try await calls.value
            #expect(sum.withLock { $0 } == (0..<total).reduce(0, +))
            #expect(started.value == total)
        }
    }

    /// A node that hosts no actors refuses a call, naming the actor.
    @Test func aNodeWithoutActorsRefusesACall() async throws {
        try await nodes.withNode(nodes.options()) { node in
            let peer = try await nodes.connect(node)
            defer { peer.close() }
            let alpha = ClusterActorSystem(name: "alpha")
            alpha.connect(to: "beta", through: peer)
            let remote = try LinkedGreeter.resolve(id: ClusterActorID(system: "beta", number: 1), using: alpha)
            await #expect(throws: ClusterActorSystemError.actorNotFound(ClusterActorID(system: "beta", number: 1))) {
                try await remote.greet("x")
            }
        }
    }
}
