import Distributed
import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetActors
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport

/// Peer links connect a program's actor system to the nodes that host actors of the same
/// program: spawns and calls travel over real TCP links (with a token), and a node of another
/// build is refused at the handshake.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ActorSpawnLinkTests {
    let nodes = NodeHarness()
    static let token = "a-token-of-at-least-16-bytes"

    distributed actor Worker {
        typealias ActorSystem = ClusterActorSystem
        let label: String

        init(label: String, actorSystem: ClusterActorSystem) {
            self.label = label
            self.actorSystem = actorSystem
        }

        distributed func work(_ sector: Int) -> String { "\(label) scanned \(sector) on \(id.system)" }

        /// Asks `other` to work, wherever it lives.
        distributed func ask(_ other: Worker, _ sector: Int) async throws -> String {
            try await other.work(sector)
        }

        /// Calls `listener` back, wherever it lives.
        distributed func tell(_ listener: Listener, _ text: String) async throws -> String {
            try await listener.heard("\(text) from \(id.system)")
        }
    }

    distributed actor Listener {
        typealias ActorSystem = ClusterActorSystem
        distributed func heard(_ text: String) -> String { "heard \(text) on \(id.system)" }
    }

    distributed actor Stranger {
        typealias ActorSystem = ClusterActorSystem
        distributed func hello() -> String { "hi" }
    }

    struct Broken: Error, CustomStringConvertible {
        var description: String { "no such label" }
    }

    static func registry(stranger: Bool = false) throws -> ActorRegistry {
        var registry = ActorRegistry()
        try registry.declare(Worker.self, arguments: String.self) { label, system in
            guard !label.isEmpty else { throw Broken() }
            return Worker(label: label, actorSystem: system)
        }
        if stranger { try registry.declare(Stranger.self) { Stranger(actorSystem: $0) } }
        return registry
    }

    final class Events: Sendable {
        private let events = Watched<[ClusterEvent]>([])
        func append(_ event: ClusterEvent) { events.update { $0.append(event) } }
        var all: [ClusterEvent] { events.value }
        func waitFor(upTo limit: Duration = .seconds(60), _ matches: @escaping @Sendable (ClusterEvent) -> Bool) async throws {
            try await events.wait(upTo: limit) { $0.contains(where: matches) }
        }
    }

    /// A node named `name` hosting actors of `registry`, linked to a caller system with
    /// `callerRegistry` over a token link.
    func withLinkedNode(_ registry: ActorRegistry, caller callerRegistry: ActorRegistry,
                        _ body: (ClusterActorSystem, Node, Events) async throws -> Void) async throws {
        var options = nodes.options(token: Self.token)
        options.name = "beta"
        options.actors = ClusterActorSystem(name: "beta-1234", registry: registry)
        try await nodes.withNode(options) { node in
            let caller = ClusterActorSystem(name: "caller", registry: callerRegistry)
            var settings = PeerLinks.Settings(timeout: .seconds(30), token: Self.token)
            settings.actors = caller
            settings.refusalRetryDelay = .seconds(60)
            let events = Events()
            let links = PeerLinks(cluster: ClusterConfig(nodes: [.init(name: "beta", port: node.port)]), systems: Systems(),
                                  settings: settings) { events.append($0) }
            do {
                try await body(caller, node, events)
                await links.stop()
            } catch {
                await links.stop()
                throw error
            }
        }
    }

    @Test func aNodeOfTheSameProgramTakesSpawnsAndCallsUntilItsLinkEnds() async throws {
        try await withLinkedNode(try Self.registry(), caller: try Self.registry()) { caller, node, events in
            try await events.waitFor { if case .connected = $0 { true } else { false } }
            #expect(caller.nodes == ["beta"])
            let worker = try await caller.spawn(Worker.self, with: "w", on: .leastLoaded, name: "first")
            #expect(worker.id.system == "beta-1234")
            #expect(try await worker.work(7) == "w scanned 7 on beta-1234")
            #expect(try await caller.lookup(Worker.self, named: "first")?.id == worker.id)
            #expect(try await caller.lookup(Worker.self, named: "second") == nil)
            await #expect(throws: ClusterActorSystemError.nameTaken("first")) {
                try await caller.spawn(Worker.self, with: "again", on: .node("beta"), name: "first")
            }
            // What the factory threw on the node comes back as the node saw it.
            do {
                _ = try await caller.spawn(Worker.self, with: "", on: .node("beta"))
                Issue.record("a factory that threw made an actor")
            } catch ClusterActorSystemError.remote(let type, let message) {
                #expect(type == "Broken" && message == "no such label")
            }
            await node.stop(grace: .seconds(1))
            try await events.waitFor { if case .disconnected = $0 { true } else { false } }
            #expect(caller.nodes.isEmpty)
            await #expect(throws: ClusterActorSystemError.noRoute(system: "beta-1234")) { try await worker.work(8) }
        }
    }

    /// A reference to one of the caller's own actors, passed to an actor on the node, is called
    /// back over the same link (sealed, with the token); once the link ends it has no route.
    @Test func aReferenceToTheCallersActorPassedToANodesActorIsCalledBack() async throws {
        try await withLinkedNode(try Self.registry(), caller: try Self.registry()) { caller, node, events in
            try await events.waitFor { if case .connected = $0 { true } else { false } }
            let worker = try await caller.spawn(Worker.self, with: "w", on: .node("beta"))
            let listener = Listener(actorSystem: caller)
            #expect(try await worker.tell(listener, "hello") == "heard hello from beta-1234 on caller")
            let told = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<100 { group.addTask { try await worker.tell(listener, "\(index)") } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(told == Set((0..<100).map { "heard \($0) from beta-1234 on caller" }))
            #expect(node.options.actors?.nodes == ["coordinator"])
            await node.stop(grace: .seconds(1))
            #expect(node.options.actors?.nodes.isEmpty == true)
            _ = listener
        }
    }

    /// An actor lives as long as the connection that spawned it: when it closes, the node
    /// lets its actors and their names go, and another client may take the name again.
    @Test func theActorsAConnectionSpawnedGoWithIt() async throws {
        let host = ClusterActorSystem(name: "beta-1234", registry: try Self.registry())
        var options = nodes.options()
        options.actors = host
        try await nodes.withNode(options) { node in
            let first = try await nodes.connect(node)
            let made = try await first.spawn(ActorSpawn(type: "Worker", name: "kept", arguments: .string("a")), timeout: .seconds(30))
            #expect(host.lookupHere(name: "kept") == made)
            #expect(host.state.withLock { $0.spawned.count } == 1)
            first.close()
            try await awaitState(upTo: .seconds(60)) { host.state.withLock { $0.spawned.isEmpty && $0.names.isEmpty } }
            let second = try await nodes.connect(node)
            defer { second.close() }
            let again = try await second.spawn(ActorSpawn(type: "Worker", name: "kept", arguments: .string("b")), timeout: .seconds(30))
            #expect(again != made)
            #expect(host.metricFamilies().first { $0.name == "skynet_actors" }?.samples.first?.value == 1)
        }
    }

    /// Nodes link only to their callers: a node's actor calls another node's actor, whose
    /// reference it was given, through the program that links both (which relays the call).
    @Test func aNodesActorCallsAnotherNodesActorThroughTheProgramThatLinksBoth() async throws {
        let registry = try Self.registry()
        var beta = nodes.options(token: Self.token), gamma = nodes.options(token: Self.token)
        (beta.name, gamma.name) = ("beta", "gamma")
        beta.actors = ClusterActorSystem(name: "beta-1234", registry: registry)
        gamma.actors = ClusterActorSystem(name: "gamma-5678", registry: registry)
        try await nodes.withNode(beta) { betaNode in
            try await nodes.withNode(gamma) { gammaNode in
                let caller = ClusterActorSystem(name: "caller", registry: registry)
                caller.relayCalls()
                var settings = PeerLinks.Settings(timeout: .seconds(30), token: Self.token)
                settings.actors = caller
                let events = Events()
                let links = PeerLinks(cluster: ClusterConfig(nodes: [.init(name: "beta", port: betaNode.port),
                                                                     .init(name: "gamma", port: gammaNode.port)]),
                                      systems: Systems(), settings: settings) { events.append($0) }
                do {
                    try await awaitState(upTo: .seconds(60)) { caller.nodes == ["beta", "gamma"] }
                    let onGamma = try await caller.spawn(Worker.self, with: "g", on: .node("gamma"))
                    let onBeta = try await caller.spawn(Worker.self, with: "b", on: .node("beta"))
                    #expect(try await onBeta.ask(onGamma, 7) == "g scanned 7 on gamma-5678")
                    await links.stop()
                } catch {
                    await links.stop()
                    throw error
                }
            }
        }
    }

    @Test func aTypeTheNodeDoesNotDeclareIsRefusedOverTheLink() async throws {
        // The same build, by its types: the caller names a type the node's registry lacks only
        // when it sends the name itself, as another client could.
        try await withLinkedNode(try Self.registry(), caller: try Self.registry()) { caller, _, events in
            try await events.waitFor { if case .connected = $0 { true } else { false } }
            let channel = try #require(caller.state.withLock { $0.links["beta-1234"]?.channel })
            await #expect(throws: ClusterActorSystemError.undeclaredType("Stranger")) {
                try await channel.spawn(ActorSpawn(type: "Stranger"), timeout: .seconds(30))
            }
        }
    }

    @Test func aNodeThatDeclaresOtherTypesIsRefusedAtTheHandshake() async throws {
        try await withLinkedNode(try Self.registry(), caller: try Self.registry(stranger: true)) { caller, _, events in
            try await events.waitFor { if case .actorsDiffer = $0 { true } else { false } }
            #expect(caller.nodes.isEmpty)
            #expect(!events.all.contains { if case .connected = $0 { true } else { false } })
            let line = try #require(events.all.first { if case .actorsDiffer = $0 { true } else { false } }).description
            #expect(line.hasPrefix("[Cluster] Actors differ: beta declares other actor types"), "\(line)")
            await #expect(throws: ClusterActorSystemError.self) { try await caller.spawn(Worker.self, with: "w") }
        }
    }
}
