import Distributed
import Testing
@testable import SkyNetActors
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// What becomes of spawned actors when the link to their node ends: made again elsewhere with
/// a restart policy (their references keep working), or terminated, with `whenTerminated`
/// told once.
struct ActorLifecycleTests {
    typealias Tally = ActorSpawnTests.Tally

    /// The caller and its hosts, each reached through a channel that carries JSON text.
    func cluster(_ names: [String]) throws -> (ClusterActorSystem, [String: (ClusterActorSystem, Int)]) {
        let (caller, hosts) = try ActorSpawnTests.cluster(names, registry: ActorSpawnTests.registry())
        var links: [String: (ClusterActorSystem, Int)] = [:]
        for host in hosts { links[String(host.name.dropLast(4))] = (host, caller.state.withLock { $0.links[host.name]?.number } ?? 0) }
        return (caller, links)
    }

    @Test func aRestartableActorIsMadeAgainOnAnotherNodeAndItsReferenceKeepsWorking() async throws {
        let (caller, hosts) = try cluster(["alpha", "beta"])
        let tally = try await caller.spawn(Tally.self, with: "apples", on: .node("alpha"), restart: .onNodeLoss)
        #expect(try await tally.add(2) == "apples 2 on alpha-tag")
        let terminated = SkyNetTestSupport.Counter()
        caller.whenTerminated(tally.id) { _ in terminated.increment() }
        let (alpha, link) = try #require(hosts["alpha"])
        caller.disconnect(from: alpha.name, link: link)
        // The same reference, its ID unchanged: the new actor on beta, its state anew.
        #expect(try await tally.add(1) == "apples 1 on beta-tag")
        #expect(tally.id.system == "alpha-tag")
        #expect(try await tally.add(1) == "apples 2 on beta-tag")
        #expect(terminated.value == 0)
        // With no node left to make it on, it is gone.
        let (beta, betaLink) = try #require(hosts["beta"])
        caller.disconnect(from: beta.name, link: betaLink)
        try await awaitState(upTo: .seconds(60)) { terminated.value == 1 }
        await #expect(throws: ClusterActorSystemError.self) { try await tally.add(1) }
        #expect(terminated.value == 1)
    }

    @Test func anActorWithoutOneIsTerminatedOnceItsNodeIsLostButNotWhenTheSystemStopsItsLinks() async throws {
        let (caller, hosts) = try cluster(["alpha", "beta"])
        let onAlpha = try await caller.spawn(Tally.self, with: "a", on: .node("alpha"))
        let onBeta = try await caller.spawn(Tally.self, with: "b", on: .node("beta"))
        let gone = Locked<[ClusterActorID]>([])
        caller.whenTerminated(onAlpha.id) { id in gone.withLock { $0.append(id) } }
        caller.whenTerminated(onBeta.id) { id in gone.withLock { $0.append(id) } }
        let (alpha, alphaLink) = try #require(hosts["alpha"]), (beta, betaLink) = try #require(hosts["beta"])
        caller.disconnect(from: beta.name, link: betaLink, nodeLost: false)  // this system stopping its links
        caller.disconnect(from: alpha.name, link: alphaLink)
        caller.disconnect(from: alpha.name, link: alphaLink)  // told once
        #expect(gone.withLock { $0 } == [onAlpha.id])
        await #expect(throws: ClusterActorSystemError.noRoute(system: "alpha-tag")) { try await onAlpha.add(1) }
        // Asked about an actor already gone, it tells at once.
        let late = SkyNetTestSupport.Counter()
        caller.whenTerminated(onAlpha.id) { _ in late.increment() }
        #expect(late.value == 1)
    }

    @Test func aLocalActorIsTerminatedWhenItIsDeinitialized() async throws {
        let system = ClusterActorSystem(name: "here")
        let gone = SkyNetTestSupport.Counter()
        var tally: Tally? = Tally(label: "x", actorSystem: system)
        let id = try #require(tally?.id)
        system.whenTerminated(id) { _ in gone.increment() }
        #expect(gone.value == 0)
        tally = nil
        #expect(gone.value == 1)
        _ = tally
    }
}
