import Distributed
import Testing
@testable import SkyNetActors
@testable import SkyNetRuntime
@testable import SkyNetWire

/// Spawns, placement and lookup between systems in one process, through channels that carry
/// every call and spawn as JSON text, as a link would.
struct ActorSpawnTests {
    distributed actor Tally {
        typealias ActorSystem = ClusterActorSystem
        let label: String
        private var total = 0

        init(label: String, actorSystem: ClusterActorSystem) {
            self.label = label
            self.actorSystem = actorSystem
        }

        distributed func add(_ amount: Int) -> String {
            total += amount
            return "\(label) \(total) on \(id.system)"
        }
    }

    distributed actor Other {
        typealias ActorSystem = ClusterActorSystem
        distributed func ping() -> Int { 1 }
    }

    struct Refused: Error {}

    /// A registry declaring `Tally` (made from its label) and, with `other`, `Other`.
    static func registry(other: Bool = false, failing: Bool = false) throws -> ActorRegistry {
        var registry = ActorRegistry()
        try registry.declare(Tally.self, arguments: String.self) { label, system in
            if failing { throw Refused() }
            return Tally(label: label, actorSystem: system)
        }
        if other { try registry.declare(Other.self) { Other(actorSystem: $0) } }
        return registry
    }

    /// A caller linked to nodes named `names`, each a system with `registry`.
    static func cluster(_ names: [String], registry: ActorRegistry, callerRegistry: ActorRegistry? = nil, maxActors: Int = 10_000)
    throws -> (ClusterActorSystem, [ClusterActorSystem]) {
        let caller = ClusterActorSystem(name: "caller", registry: try callerRegistry ?? Self.registry(other: true))
        let hosts = names.map { ClusterActorSystem(name: "\($0)-tag", registry: registry, maxActors: maxActors) }
        for host in hosts { caller.connect(to: host.name, node: String(host.name.dropLast(4)), through: ClusterActorSystemTests.TextChannel(host: host)) }
        return (caller, hosts)
    }

    @Test func anActorSpawnedOnANamedNodeRunsThereWithItsArguments() async throws {
        let (caller, hosts) = try Self.cluster(["alpha", "beta"], registry: Self.registry())
        let tally = try await caller.spawn(Tally.self, with: "apples", on: .node("beta"))
        #expect(__isRemoteActor(tally))
        #expect(tally.id.system == "beta-tag")
        #expect(try await tally.add(2) == "apples 2 on beta-tag")
        #expect(try await tally.add(3) == "apples 5 on beta-tag")
        // The host holds what it spawned: nothing else there refers to it.
        #expect(hosts[1].state.withLock { $0.spawned.count } == 1)
        #expect(hosts[0].state.withLock { $0.spawned.count } == 0)
        #expect(caller.nodes == ["alpha", "beta"])
    }

    @Test func aLocalSpawnIsTheActorItself() async throws {
        let (caller, _) = try Self.cluster([], registry: Self.registry())
        let tally = try await caller.spawn(Tally.self, with: "here", on: .local, name: "mine")
        #expect(!__isRemoteActor(tally))
        #expect(try await tally.add(1) == "here 1 on caller")
        #expect(try await caller.lookup(Tally.self, named: "mine")?.id == tally.id)
    }

    @Test func aTypeTheNodeDidNotDeclareIsRefusedAndNothingRuns() async throws {
        let (caller, hosts) = try Self.cluster(["alpha"], registry: Self.registry())
        await #expect(throws: ClusterActorSystemError.undeclaredType("Other")) {
            try await caller.spawn(Other.self, on: .node("alpha"))
        }
        #expect(hosts[0].state.withLock { $0.spawned.isEmpty && $0.spawning == 0 })
        // A type the caller itself did not declare never leaves it.
        let (bare, _) = try Self.cluster(["alpha"], registry: Self.registry(), callerRegistry: ActorRegistry())
        await #expect(throws: ClusterActorSystemError.undeclaredType(String(describing: Tally.self))) {
            try await bare.spawn(Tally.self, with: "x", on: .node("alpha"))
        }
    }

    @Test func whatAFactoryThrowsReachesTheCallerAndFreesItsPlace() async throws {
        let (caller, hosts) = try Self.cluster(["alpha"], registry: Self.registry(failing: true), callerRegistry: Self.registry(failing: true), maxActors: 1)
        await #expect(throws: ClusterActorSystemError.remote(type: "Refused", message: "Refused()")) {
            try await caller.spawn(Tally.self, with: "x", on: .node("alpha"), name: "one")
        }
        // Here, what the factory threw comes as it was thrown.
        await #expect(throws: Refused.self) { try await caller.spawn(Tally.self, with: "y", on: .local) }
        #expect(hosts[0].state.withLock { $0.spawning == 0 && $0.names.isEmpty })
        #expect(caller.state.withLock { $0.placed["alpha-tag"] } == 0)
    }

    @Test func namesAreUniqueOnANodeAndLookupFindsThemAcrossNodes() async throws {
        let (caller, _) = try Self.cluster(["alpha", "beta"], registry: Self.registry())
        let first = try await caller.spawn(Tally.self, with: "a", on: .node("beta"), name: "counter")
        await #expect(throws: ClusterActorSystemError.nameTaken("counter")) {
            try await caller.spawn(Tally.self, with: "b", on: .node("beta"), name: "counter")
        }
        // Another node may use the name: names are per system.
        _ = try await caller.spawn(Tally.self, with: "c", on: .node("alpha"), name: "other")
        let found = try #require(try await caller.lookup(Tally.self, named: "counter"))
        #expect(found.id == first.id)
        #expect(try await found.add(1) == "a 1 on beta-tag")
        #expect(try await caller.lookup(Tally.self, named: "nobody") == nil)
    }

    @Test func aNodeMakesAtMostItsMostActors() async throws {
        let (caller, hosts) = try Self.cluster(["alpha"], registry: Self.registry(), maxActors: 3)
        for index in 0..<3 { _ = try await caller.spawn(Tally.self, with: "\(index)", on: .node("alpha")) }
        await #expect(throws: ClusterActorSystemError.self) { try await caller.spawn(Tally.self, with: "4", on: .node("alpha")) }
        do {
            _ = try await caller.spawn(Tally.self, with: "5", on: .node("alpha"))
        } catch ClusterActorSystemError.tooManyActors(let reason) {
            #expect(reason.contains("3 actors"))
        }
        #expect(hosts[0].state.withLock { $0.spawned.count } == 3)
    }

    @Test func spreadTakesEachNodeInTurnAndLeastLoadedTheOneWithFewestActors() async throws {
        let (caller, _) = try Self.cluster(["alpha", "beta", "gamma"], registry: Self.registry())
        var spread: [String] = []
        for index in 0..<6 { spread.append(try await caller.spawn(Tally.self, with: "\(index)", on: .spread).id.system) }
        #expect(spread == ["alpha-tag", "beta-tag", "gamma-tag", "alpha-tag", "beta-tag", "gamma-tag"])
        _ = try await caller.spawn(Tally.self, with: "x", on: .node("alpha"))
        _ = try await caller.spawn(Tally.self, with: "y", on: .node("gamma"))
        // alpha and gamma have 3 each now, beta 2.
        #expect(try await caller.spawn(Tally.self, with: "z", on: .leastLoaded).id.system == "beta-tag")
    }

    @Test func withNoNodeOrAnUnknownOneASpawnSaysSo() async throws {
        let (alone, _) = try Self.cluster([], registry: Self.registry())
        for placement in [ActorPlacement.leastLoaded, .spread] {
            await #expect(throws: ClusterActorSystemError.self) { try await alone.spawn(Tally.self, with: "x", on: placement) }
        }
        let (caller, _) = try Self.cluster(["alpha"], registry: Self.registry())
        do {
            _ = try await caller.spawn(Tally.self, with: "x", on: .node("omega"))
            Issue.record("a spawn on an unknown node was made")
        } catch ClusterActorSystemError.noNode(let reason) {
            #expect(reason.contains("omega") && reason.contains("alpha"))
        }
    }

    @Test func aNodeThatLeftIsNoLongerAPlaceAndItsActorsHaveNoRoute() async throws {
        let (caller, hosts) = try Self.cluster(["alpha"], registry: Self.registry())
        let tally = try await caller.spawn(Tally.self, with: "x", on: .node("alpha"))
        let number = caller.state.withLock { $0.links["alpha-tag"]?.number } ?? 0
        caller.disconnect(from: "wrong", link: number)
        caller.disconnect(from: "alpha-tag", link: number + 1)  // an older link's end leaves a newer one
        #expect(caller.nodes == ["alpha"])
        caller.disconnect(from: hosts[0].name, link: number)
        #expect(caller.nodes.isEmpty)
        await #expect(throws: ClusterActorSystemError.noRoute(system: "alpha-tag")) { try await tally.add(1) }
    }

    @Test func theBuildSaysWhichTypesARegistryDeclares() throws {
        let one = try Self.registry(), same = try Self.registry(failing: true), more = try Self.registry(other: true)
        #expect(one.build == same.build)  // factories differ, types do not
        #expect(one.build != more.build)
        var renamed = ActorRegistry()
        try renamed.declare(Tally.self, as: "Other", arguments: String.self) { Tally(label: $0, actorSystem: $1) }
        try renamed.declare(Other.self, as: "Tally") { Other(actorSystem: $0) }
        #expect(renamed.build != more.build)  // the same names standing for other types
        #expect(one.build.count == 16)
    }

    @Test func aRegistryRefusesABadOrRepeatedName() throws {
        var registry = ActorRegistry()
        #expect(throws: ActorRegistry.Refusal.self) { try registry.declare(Other.self, as: "") { Other(actorSystem: $0) } }
        #expect(throws: ActorRegistry.Refusal.self) { try registry.declare(Other.self, as: "a\nb") { Other(actorSystem: $0) } }
        try registry.declare(Other.self) { Other(actorSystem: $0) }
        #expect(throws: ActorRegistry.Refusal.self) { try registry.declare(Other.self) { Other(actorSystem: $0) } }
        #expect(registry.names == ["Other"])
    }
}
