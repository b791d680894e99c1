import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork
import SkyNetTestSupport

/// Liveness is not a deadline: a job runs as long as its peer answers pings; a silent peer has
/// its tasks failed at once; the built-in scan keeps its per-request timeout. The tests of
/// bounds run the link on a `ManualClock` and check what happens at exactly which instant.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RemoteLivenessTests {
    /// The liveness bound of these tests (the `--timeout` of a coordinator).
    let timeout: Duration = .milliseconds(300)

    /// What the remote system reported to its circuit breaker, in order.
    final class Health: Sendable {
        private let reports = Locked<[Bool]>([])
        var all: [Bool] { reports.withLock { $0 } }
        func record(_ responsive: Bool) { reports.withLock { $0.append(responsive) } }
    }

    /// Runs `body` with a fake node, a link to it (keeping time on `clock`) and a remote system
    /// over that link; all closed on every path.
    func withRemote<T>(
        deadlineMargin: Duration = RemoteSystem.defaultDeadlineMargin, clock: any TimerClock = DeadlineTimer.shared,
        _ body: (FakeNode, RemoteSystem, Health) async throws -> T
    ) async throws -> T {
        let node = try await FakeNode.start()
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port,
                                                 token: nil, timeout: .seconds(5), clock: clock)
        defer { peer.close() }
        let health = Health()
        let remote = RemoteSystem(name: "beta", peer: peer, timeout: timeout, deadlineMargin: deadlineMargin) { responsive in
            health.record(responsive)
        }
        return try await body(node, remote, health)
    }

    func slowTask(_ input: Int, timeout: Double? = nil) -> ScanTask {
        ScanTask(input: input, job: "slow", text: "in \(input)", timeout: timeout)
    }

    @Test func aLongJobIsNotFailedAfterTheTimeoutWhilePingsAreAnswered() async throws {
        let clock = ManualClock(), start = clock.now
        try await withRemote(clock: clock) { node, remote, health in
            let finished = Flag()
            let run = Task {
                defer { finished.set() }
                return try await remote.run(slowTask(7))
            }
            try await awaitState { node.held.count == 1 }
            #expect(node.held.first?.isJob == true)
            // Ten pongs, each followed by a rest of half the bound: five timeouts pass on the clock.
            for rest in 1...10 {
                await clock.waitUntilPending(at: start + timeout / 2 * rest)
                clock.advance(by: timeout / 2)
            }
            await clock.waitUntilPending(at: start + timeout / 2 * 11)
            #expect(node.pongs == 11)
            #expect(!finished.isSet)
            #expect(node.answerHeld() == 1)
            #expect(try await run.value == "done in 7")
            #expect(node.received == 1, "the job was sent once")
            #expect(node.cancels.isEmpty)
            #expect(health.all.isEmpty)
            // No work in flight: the ping loop ends after its rest.
            #expect(remote.peer.isWatchingLiveness)
            clock.advance(by: timeout / 2)
            try await awaitState { !remote.peer.isWatchingLiveness }
        }
    }

    @Test func whenThePeerStopsAnsweringPingsEveryPendingTaskFailsAtOnceAndItIsHeldBackUntilItAnswers() async throws {
        let clock = ManualClock(), start = clock.now
        try await withRemote(clock: clock) { node, remote, health in
            let runs = (0..<3).map { input in Task { try await remote.run(slowTask(input)) } }
            try await awaitState { node.held.count == 3 }
            // The liveness loop pinged, got its pong, and rests for half the bound.
            await clock.waitUntilPending(at: start + timeout / 2)
            node.answerPings(false)
            clock.advance(by: timeout / 2)
            // The next ping is sent and waits for its pong up to the bound.
            let silent = clock.now
            await clock.waitUntilPending(at: silent + timeout)
            clock.advance(by: timeout - .milliseconds(1))
            // A moment before the bound nothing has failed: the ping's limit and the tasks wait.
            #expect(clock.pendingDeadlines.contains(silent + timeout))
            #expect(remote.peer.state.withLock { $0.pending.values.filter(\.isWork).count } == 3)
            // The tasks have no time limit of their own: without the ping's they wait for ever.
            clock.advance(by: .milliseconds(1))
            for run in runs {
                let error = await #expect(throws: PeerUnresponsive.self) { try await run.value }
                #expect(error?.description == "beta did not answer a ping within 0.3 s")
            }
            #expect(clock.now - silent == timeout)
            try await awaitState { health.all == [false] }
            // Each failed request is cancelled on the node, should it still be there.
            try await awaitState { node.cancels.count == 3 }
            // The probe's first ping goes unanswered; once the node answers again, the probe
            // after it (a rest later) gets its pong.
            try await awaitState { node.unansweredPings == 2 }
            await clock.waitUntilPending(at: clock.now + timeout)
            node.answerPings(true)
            let probed = clock.now
            clock.advance(by: timeout)
            await clock.waitUntilPending(at: probed + timeout + .milliseconds(200))
            #expect(health.all == [false])
            clock.advance(by: .milliseconds(200))
            try await awaitState { health.all == [false, true] }
        }
    }

    @Test func theBuiltInScanStillFailsAtTheTimeout() async throws {
        let clock = ManualClock(), start = clock.now
        try await withRemote(clock: clock) { node, remote, health in
            let run = Task { try await remote.run(ScanTask(input: 1, duration: 30)) }
            await clock.waitUntilPending(at: start + timeout)
            try await awaitState { node.received == 1 }
            clock.advance(by: timeout - .milliseconds(1))
            #expect(remote.peer.state.withLock { $0.pending.count } == 1, "not failed a moment before its timeout")
            clock.advance(by: .milliseconds(1))
            await #expect(throws: TimeoutError.self) { try await run.value }
            #expect(node.received == 1)
            #expect(!remote.peer.isWatchingLiveness, "a scan alone starts no liveness loop")
            try await awaitState { node.cancels.count == 1 }
            try await awaitState { health.all.first == false }
        }
    }

    @Test func aJobWithADeadlineIsBoundedByItsDeadlineAndTheMargin() async throws {
        let clock = ManualClock(), start = clock.now
        try await withRemote(deadlineMargin: .milliseconds(200), clock: clock) { node, remote, health in
            let run = Task { try await remote.run(slowTask(4, timeout: 1)) }
            // The request's limit (deadline and margin) and the liveness loop's first rest.
            await clock.waitUntilPending(at: start + .milliseconds(1200))
            await clock.waitUntilPending(at: start + timeout / 2)
            clock.advance(by: .milliseconds(1199))
            try await awaitState { node.pongs >= 2 }  // pinged meanwhile
            #expect(remote.peer.state.withLock { $0.pending.values.filter(\.isWork).count } == 1,
                    "not failed a moment before its deadline and margin")
            clock.advance(by: .milliseconds(1))
            let error = await #expect(throws: ScanFailure.self) { try await run.value }
            #expect(error?.code == "deadline")
            #expect(error?.message == "beta gave no answer within its deadline of 1 s and a margin of 0.2 s")
            #expect(node.pongs >= 2, "pinged meanwhile")
            try await awaitState { node.cancels.count == 1 }
            #expect(health.all.isEmpty, "a deadline says nothing of the peer's liveness")
        }
    }
}
