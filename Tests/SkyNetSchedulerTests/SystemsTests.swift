@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

@Suite(.timeLimit(.minutes(3)))
struct SystemsTests {
    func makeSystems(local: Int = 4, peers: [(String, Int)] = []) async -> Systems {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: local), capacity: local)
        for (name, capacity) in peers {
            await systems.add(AlwaysFailingSystem(name: name, isLocal: false), capacity: capacity)
        }
        return systems
    }

    @Test func neverExceedsCapacityUnderAHundredConcurrentCallers() async throws {
        let systems = await makeSystems(local: 4, peers: [("beta", 4), ("gamma", 2)])
        let served = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    let reservation = try await systems.reserve()
                    let inFlight = await systems.inFlight(on: reservation.name)
                    #expect(inFlight <= 4)
                    await Task.yield()
                    served.increment()
                    await systems.release(reservation)
                }
            }
            try await group.waitForAll()
        }
        #expect(served.value == 100)
        let highWater = await systems.highWater
        #expect(highWater["local"] == 4)
        #expect((highWater["beta"] ?? 0) <= 4)
        #expect((highWater["gamma"] ?? 0) <= 2)
        #expect(await systems.inFlight(on: "local") == 0)
    }

    @Test func fillsTheLocalSystemBeforeAnyPeer() async {
        let systems = await makeSystems(local: 2, peers: [("beta", 4)])
        var names: [String] = []
        for _ in 0..<4 {
            if let reservation = await systems.tryReserve() { names.append(reservation.name) }
        }
        #expect(names == ["local", "local", "beta", "beta"])
    }

    @Test func aPeersLineIsOfferedOnlyWhenNoSystemHasASlotFree() async throws {
        let systems = Systems()
        await systems.add(LocalSystem(name: "local", capacity: 1), capacity: 1)
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 1, queue: 2)
        await systems.add(AlwaysFailingSystem(name: "gamma", isLocal: false), capacity: 1)
        var taken: [Reservation] = []
        while let reservation = await systems.tryReserve() { taken.append(reservation) }
        // Every slot first, in order; then beta's line, up to its length.
        #expect(taken.map(\.name) == ["local", "beta", "gamma", "beta", "beta"])
        #expect(await systems.tryReserve(localOnly: true) == nil)
        let beta = await systems.slotUse.first { $0.name == "beta" }
        #expect(beta == SlotUse(name: "beta", capacity: 1, inFlight: 1, waiting: 2, suspended: false))
        // A slot that frees is offered before the line that has room again.
        await systems.release(taken[4])
        await systems.release(taken[2])
        #expect(await systems.tryReserve()?.name == "gamma")
        #expect(await systems.tryReserve()?.name == "beta")
        // A suspended peer's line takes nothing either.
        await systems.release(taken[3])
        await systems.setSuspended(true, named: "beta")
        #expect(await systems.tryReserve() == nil)
        #expect(await systems.highWater["beta"] == 3)
    }

    @Test func aLineIsOfferedOnlyWhileEverySlotHasATaskStillToCome() async throws {
        let systems = Systems()
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 2, queue: 2)
        await systems.add(AlwaysFailingSystem(name: "gamma", isLocal: false), capacity: 1, queue: 1)
        var taken: [Reservation] = []
        for backlog in [9, 8, 7] { taken.append(try #require(await systems.tryReserve(backlog: backlog))) }
        // Three slots, all taken: with three tasks or more still to come, every slot takes
        // another anyway, so one may wait in line at its node.
        #expect(await systems.tryReserve(backlog: 3)?.name == "beta")
        // That task is out of the backlog: two are left to come, and a caller that says nothing
        // (a waiter) is held to that.
        #expect(await systems.tryReserve() == nil)
        // Fewer to come than slots: a task sent ahead would wait at one node while a slot
        // of another frees and stays idle. It waits here for the first slot that frees.
        #expect(await systems.tryReserve(backlog: 2) == nil)
        // A slot of beta's frees: the task in its line takes it, and the next one no line.
        #expect(await systems.release(taken[0], reservingAgain: false, backlog: 2) == nil)
        #expect(await systems.release(taken[2], reservingAgain: false, backlog: 2)?.name == "gamma")
        // A waiter is served by the backlog last told: no line for it either.
        let waiter = Task { try await systems.reserve().name }
        try await awaitState { await systems.waiterCount == 1 }
        await systems.add(AlwaysFailingSystem(name: "delta", isLocal: false), capacity: 1, queue: 1)
        #expect(try await withTimeout(.seconds(5)) { try await waiter.value } == "delta")
        #expect(await systems.tryReserve() == nil)
        #expect(await systems.tryReserve(backlog: 4)?.name == "beta")  // four slots, four to come
    }

    @Test func atMostMaxInLinesTasksWaitInLinesOverAllPeers() async throws {
        let systems = Systems()
        let half = Systems.maxInLines / 2
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 2, queue: half + 10)
        await systems.add(AlwaysFailingSystem(name: "gamma", isLocal: false), capacity: 2, queue: half + 10)
        var taken: [Reservation] = []
        while let reservation = await systems.tryReserve() { taken.append(reservation) }
        #expect(taken.count == 4 + Systems.maxInLines)
        #expect(taken.filter { $0.name == "beta" }.count == 2 + half + 10)
        // A slot's reservation given back frees a place in a line (its node's line holds the
        // rest), and one of a line does too; a removed peer's line is forgotten with it.
        await systems.release(taken[0])
        #expect(await systems.tryReserve()?.name == "beta")
        #expect(await systems.tryReserve() == nil)
        await systems.remove(named: "gamma")
        #expect(await systems.tryReserve()?.name == nil)  // beta's own line is full
        await systems.add(AlwaysFailingSystem(name: "delta", isLocal: false), capacity: 1, queue: 2000)
        var delta = 0
        while await systems.tryReserve() != nil { delta += 1 }
        #expect(delta == 1 + Systems.maxInLines - (half + 10))
    }

    @Test func aWaiterIsWokenWhenASlotFrees() async throws {
        let systems = await makeSystems(local: 1)
        let held = try #require(await systems.tryReserve())
        let woken = Flag()
        let waiter = Task {
            let reservation = try await systems.reserve()
            woken.set()
            return reservation.name
        }
        // The waiter is in line and nothing freed a slot: it must still be waiting.
        try await awaitState { await systems.waiterCount == 1 }
        for _ in 0..<100 { await Task.yield() }
        #expect(!woken.isSet)
        await systems.release(held)
        #expect(try await withTimeout(.seconds(5)) { try await waiter.value } == "local")
    }

    @Test func aWaiterIsWokenWhenASystemJoins() async throws {
        let systems = await makeSystems(local: 0)
        let waiter = Task { try await systems.reserve().name }
        try await awaitState { await systems.waiterCount == 1 }
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 1)
        #expect(try await withTimeout(.seconds(5)) { try await waiter.value } == "beta")
    }

    @Test func localWaitersGetAFreedLocalSlotFirst() async throws {
        let systems = await makeSystems(local: 1)
        let held = try #require(await systems.tryReserve())
        let anyWaiter = Task { try await systems.reserve() }
        try await awaitState { await systems.waiterCount == 1 }
        let localWaiter = Task { try await systems.reserve(localOnly: true) }
        try await awaitState { await systems.waiterCount == 2 }
        await systems.release(held)
        let first = try await withTimeout(.seconds(5)) { try await localWaiter.value }
        #expect(first.name == "local")
        anyWaiter.cancel()
        await #expect(throws: CancellationError.self) { try await anyWaiter.value }
        #expect(await systems.inFlight(on: "local") == 1)
    }

    @Test func aCancelledWaiterLeavesTheLine() async throws {
        let systems = await makeSystems(local: 1)
        let held = try #require(await systems.tryReserve())
        let waiter = Task { try await systems.reserve() }
        try await awaitState { await systems.waiterCount == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        try await awaitState { await systems.waiterCount == 0 }
        await systems.release(held)
        #expect(await systems.inFlight(on: "local") == 0)
    }

    @Test func addingANameAgainReplacesItAndRemoveDropsIt() async {
        let systems = await makeSystems(local: 1, peers: [("beta", 1), ("gamma", 1)])
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 3)
        #expect(await systems.names == ["local", "beta", "gamma"])
        #expect(await systems.slotUse.map(\.capacity).reduce(0, +) == 5)
        await systems.remove(named: "beta")
        #expect(await systems.names == ["local", "gamma"])
    }

    @Test func aSlotOfAReplacedSystemIsReleasedIntoNothing() async throws {
        let systems = await makeSystems(local: 0, peers: [("beta", 1)])
        let old = try #require(await systems.tryReserve())
        await systems.add(AlwaysFailingSystem(name: "beta", isLocal: false), capacity: 1)
        let new = try #require(await systems.tryReserve())
        await systems.release(old)
        #expect(await systems.inFlight(on: "beta") == 1)
        await systems.release(new)
        #expect(await systems.inFlight(on: "beta") == 0)
    }
}
