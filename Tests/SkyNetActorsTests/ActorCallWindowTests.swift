import Distributed
import Testing
@testable import SkyNetActors
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// A caller keeps at most `ActorCall.maxCallsPerConnection` calls in flight on a link and the
/// rest waiting in turn; every call has a deadline; a call whose link ended may have run, and
/// is made again only when its caller asked for retries.
struct ActorCallWindowTests {
    distributed actor Echo {
        typealias ActorSystem = ClusterActorSystem
        distributed func echo(_ value: Int) -> Int { value }
    }

    struct Gone: Error {}

    /// A channel whose calls wait at a gate, counting how many are in flight at once; its
    /// first `failures` calls fail as a link that ended would.
    final class GatedChannel: ActorCallChannel {
        private struct State {
            var inFlight = 0
            var most = 0
            var arrived = 0
            var failures: Int
            var open: Bool
        }
        private let state: Watched<State>

        init(open: Bool = false, failures: Int = 0) {
            state = Watched(State(failures: failures, open: open))
        }

        var isDraining: Bool { false }
        var most: Int { state.value.most }
        var arrived: Int { state.value.arrived }
        func open() { state.update { $0.open = true } }
        func waitForArrivals(_ count: Int) async throws { try await state.wait(upTo: .seconds(60)) { $0.arrived >= count } }

        func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
            let fails = state.update { state -> Bool in
                state.arrived += 1
                state.inFlight += 1
                state.most = max(state.most, state.inFlight)
                guard state.failures > 0 else { return false }
                state.failures -= 1
                return true
            }
            defer { state.update { $0.inFlight -= 1 } }
            if fails { throw Gone() }
            try await state.wait(upTo: .seconds(60)) { $0.open }
            return .returned(call.arguments.first)
        }

        func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID { throw Gone() }
        func lookup(name: String, type: String) async throws -> ClusterActorID? { nil }
    }

    /// A caller with a link to `host`'s system through `channel`, and an `Echo` there.
    func linked(_ channel: GatedChannel, clock: any TimerClock = DeadlineTimer.shared) throws -> (ClusterActorSystem, Echo) {
        let caller = ClusterActorSystem(name: "caller", clock: clock)
        caller.connect(to: "host", node: "node1", through: channel)
        return (caller, try Echo.resolve(id: ClusterActorID(system: "host", number: 1), using: caller))
    }

    @Test func callsBeyondALinksWindowWaitTheirTurnAndEveryOneCompletes() async throws {
        let channel = GatedChannel()
        let (caller, echo) = try linked(channel)
        let results = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<300 { group.addTask { try await echo.echo(index) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await channel.waitForArrivals(ActorCall.maxCallsPerConnection)
        // The other calls' tasks may still be on their way to the link: awaited, not assumed.
        try await awaitState(upTo: .seconds(60)) {
            caller.state.withLock { $0.links["host"]?.waiting.count } == 300 - ActorCall.maxCallsPerConnection
        }
        #expect(channel.arrived == ActorCall.maxCallsPerConnection)
        channel.open()
        #expect(Set(try await results.value) == Set(0..<300))
        #expect(channel.most == ActorCall.maxCallsPerConnection)
        #expect(caller.state.withLock { ($0.links["host"]?.calls, $0.links["host"]?.waiting.count) } == (0, 0))
    }

    @Test func aCallWaitingForRoomEndsAtItsDeadlineAndACancelledOneAtOnce() async throws {
        let clock = ManualClock(), channel = GatedChannel()
        let (caller, echo) = try linked(channel, clock: clock)
        let busy = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<ActorCall.maxCallsPerConnection { group.addTask { try await echo.echo(index) } }
                return try await group.reduce(0) { $0 + $1 }
            }
        }
        try await channel.waitForArrivals(ActorCall.maxCallsPerConnection)
        let late = Task {
            try await ClusterActorSystem.withCallOptions(CallOptions(timeout: .seconds(2))) { try await echo.echo(-1) }
        }
        let cancelled = Task { try await echo.echo(-2) }
        try await awaitState(upTo: .seconds(60)) { caller.state.withLock { $0.links["host"]?.waiting.count } == 2 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        clock.advance(by: .seconds(2))
        await #expect(throws: ClusterActorSystemError.deadline(.seconds(2))) { try await late.value }
        #expect(caller.state.withLock { $0.links["host"]?.waiting.isEmpty } == true)
        channel.open()
        #expect(try await busy.value == (0..<ActorCall.maxCallsPerConnection).reduce(0, +))
        #expect(channel.arrived == ActorCall.maxCallsPerConnection)  // neither waiting call ran
    }

    @Test func aLinkThatEndsFailsTheCallsWaitingOnIt() async throws {
        let channel = GatedChannel()
        let (caller, echo) = try linked(channel)
        // Which calls get a place is up to the order their tasks run in: the waiting ones are
        // counted by how they end, not picked by index.
        let noRoute = Locked(0)
        let calls = (0..<(ActorCall.maxCallsPerConnection + 10)).map { index in
            Task {
                do {
                    return try await echo.echo(index)
                } catch ClusterActorSystemError.noRoute {
                    noRoute.withLock { $0 += 1 }
                    return -1
                }
            }
        }
        try await awaitState(upTo: .seconds(60)) { caller.state.withLock { $0.links["host"]?.waiting.count } == 10 }
        let number = caller.state.withLock { $0.links["host"]?.number } ?? 0
        caller.disconnect(from: "host", link: number)
        // The waiting calls fail at once, while those in flight still wait at the gate.
        try await awaitState(upTo: .seconds(60)) { noRoute.withLock { $0 } == 10 }
        #expect(channel.arrived == ActorCall.maxCallsPerConnection)
        channel.open()
        var returned = 0
        for call in calls where try await call.value >= 0 { returned += 1 }
        #expect(returned == ActorCall.maxCallsPerConnection)
        #expect(noRoute.withLock { $0 } == 10)
    }

    @Test func aCallWhoseLinkEndedMayHaveRunAndIsMadeAgainOnlyWhenAsked() async throws {
        let once = GatedChannel(open: true, failures: 1)
        let (_, echo) = try linked(once)
        do {
            _ = try await echo.echo(1)
            Issue.record("a call whose link ended returned")
        } catch ClusterActorSystemError.linkLost(let node, _) {
            #expect(node == "node1")
            #expect(ClusterActorSystemError.linkLost(node: node, reason: "x").description.contains("may have run"))
        }
        #expect(once.arrived == 1)
        let retried = GatedChannel(open: true, failures: 2)
        let (_, again) = try linked(retried)
        let value = try await ClusterActorSystem.withCallOptions(CallOptions(retries: 2)) { try await again.echo(7) }
        #expect(value == 7)
        #expect(retried.arrived == 3)
    }
}
