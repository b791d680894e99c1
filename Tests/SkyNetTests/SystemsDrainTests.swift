import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

/// A draining system in the registry (issue 22): no new work, and `idle` says when its
/// running work is over.
@Suite(.timeLimit(.minutes(3)))
struct SystemsDrainTests {
    let systemsTests = SystemsTests()

    @Test func aDrainingSystemGetsNoReservationAndShowsAsDraining() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 2), ("gamma", 1)])
        let first = try #require(await systems.tryReserve())
        #expect(first.name == "beta")
        await systems.setDraining(true, named: "beta")
        // beta still has a free slot, but only gamma is given work; then nobody.
        #expect(await systems.tryReserve()?.name == "gamma")
        #expect(await systems.tryReserve() == nil)
        let use = await systems.slotUse.filter { $0.name != "local" }
        #expect(use.map(\.draining) == [true, false])
        #expect(use.first?.inFlight == 1)
        // Un-drained (its address came back): it takes work again, and a waiter is served.
        let waiter = Task { try await systems.reserve() }
        try await awaitState(upTo: .seconds(10)) { await systems.waiterCount == 1 }
        await systems.setDraining(false, named: "beta")
        #expect(try await waiter.value.name == "beta")
    }

    @Test func idleResumesWhenTheLastSlotIsReleased() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 2)])
        let one = try #require(await systems.tryReserve()), two = try #require(await systems.tryReserve())
        await systems.setDraining(true, named: "beta")
        let idle = Task { await systems.idle(named: "beta") }
        await systems.release(one)
        try await Task.sleep(for: .milliseconds(50))  // not a wait for readiness: a window for a wrong early return
        #expect(await systems.inFlight(on: "beta") == 1)
        let early: Void? = await within(.milliseconds(100)) { await idle.value }
        #expect(early == nil, "idle returned while a slot was still reserved")
        await systems.release(two)
        let done: Void? = await within(.seconds(10)) { await idle.value }
        #expect(done != nil)
    }

    @Test func idleResumesWhenTheSystemIsRemovedOrRetired() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 1), ("gamma", 1)])
        _ = try #require(await systems.tryReserve())
        let gamma = try #require(await systems.tryReserve())
        #expect(gamma.name == "gamma")
        let betaIdle = Task { await systems.idle(named: "beta") }
        let gammaIdle = Task { await systems.idle(named: "gamma") }
        try await awaitState(upTo: .seconds(10)) { await systems.idleWaiterCount == 2 }
        await systems.remove(named: "beta")
        #expect(await within(.seconds(10)) { await betaIdle.value } != nil)
        await systems.retire(gamma)
        #expect(await within(.seconds(10)) { await gammaIdle.value } != nil)
        // Nothing reserved, or no such system: at once.
        #expect(await within(.seconds(10)) { await systems.idle(named: "nobody") } != nil)
    }
}
