@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// A draining system in the registry: no new work, and `idle` says when its
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

    /// Two reasons to give a member no work, kept apart: an address that returns to DNS takes
    /// back its leave, never a drain its node announced (it would refuse every task `busy`).
    @Test func anAddressThatReturnsDoesNotUndrainANodeThatIsStopping() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 2)])
        #expect(await systems.setLeaving(true, named: "beta"))  // here and taking work: worth saying
        #expect(await systems.tryReserve() == nil)
        #expect(await systems.setLeaving(false, named: "beta"))
        #expect(await systems.tryReserve()?.name == "beta")

        await systems.setDraining(true, named: "beta")  // the node said it drains
        #expect(await systems.setLeaving(true, named: "beta") == false)  // shown as draining already
        #expect(await systems.setLeaving(false, named: "beta") == false)
        #expect(await systems.tryReserve() == nil)
        #expect(await systems.slotUse.first { $0.name == "beta" }?.draining == true)
    }

    /// A leaving member's link that drops and registers again stays without work; the mark is
    /// forgotten only once no system of that name is there.
    @Test func theLeavingMarkOutlivesARedialAndIsForgottenOnceTheMemberIsGone() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 2)])
        await systems.setLeaving(true, named: "beta")
        await systems.remove(named: "beta")
        #expect(await systems.setLeaving(true, named: "beta") == false)  // marked already, and gone
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 2)
        #expect(await systems.tryReserve() == nil)
        #expect(await systems.slotUse.first { $0.name == "beta" }?.draining == true)
        await systems.forgetLeaving(named: "beta")  // it is here: kept
        #expect(await systems.tryReserve() == nil)
        await systems.remove(named: "beta")
        await systems.forgetLeaving(named: "beta")
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 2)
        #expect(await systems.tryReserve()?.name == "beta")
    }

    /// A node already draining when it welcomed us is added as such, in one step: no task is
    /// offered to it in between (each would bounce `busy`).
    @Test func aSystemAddedDrainingIsNeverOfferedWork() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [])
        let waiter = Task { try await systems.reserve() }
        defer { waiter.cancel() }
        try await awaitState(upTo: .seconds(10)) { await systems.waiterCount == 1 }
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 2, draining: true)
        #expect(await systems.waiterCount == 1)
        #expect(await systems.slotUse.first { $0.name == "beta" }?.draining == true)
    }

    /// `idle` called by a task cancelled already returns at once, and leaves no waiter behind.
    @Test func aCancelledIdleCallerReturnsAndLeavesNoWaiter() async throws {
        let systems = await systemsTests.makeSystems(local: 0, peers: [("beta", 2)])
        _ = try #require(await systems.tryReserve())
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await systems.idle(named: "beta")
        }
        #expect(await within(.seconds(10)) { await before.value } != nil)
        let parked = Task { await systems.idle(named: "beta") }
        try await awaitState(upTo: .seconds(10)) { await systems.idleWaiterCount == 1 }
        parked.cancel()
        #expect(await within(.seconds(10)) { await parked.value } != nil)
        try await awaitState(upTo: .seconds(10)) { await systems.idleWaiterCount == 0 }
    }
}
