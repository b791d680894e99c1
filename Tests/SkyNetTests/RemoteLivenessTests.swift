import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork

/// Liveness is not a deadline: a job runs as long as its peer answers pings; a silent peer has
/// its tasks failed at once; the built-in scan keeps its per-request timeout.
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

    /// Runs `body` with a fake node, a link to it and a remote system over that link; all
    /// closed on every path.
    func withRemote<T>(
        deadlineMargin: Duration = RemoteSystem.defaultDeadlineMargin,
        _ body: (FakeNode, RemoteSystem, Health) async throws -> T
    ) async throws -> T {
        let node = try await FakeNode.start()
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port,
                                                 token: nil, timeout: .seconds(5))
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
        try await withRemote { node, remote, health in
            let finished = Flag()
            let run = Task {
                defer { finished.set() }
                return try await remote.run(slowTask(7))
            }
            try await awaitState { node.held.count == 1 }
            #expect(node.held.first?.isJob == true)
            // Ten pongs, each after a rest of half the bound: well over four timeouts have passed.
            try await awaitState { node.pongs >= 10 }
            #expect(!finished.isSet)
            #expect(node.answerHeld() == 1)
            #expect(try await run.value == "done in 7")
            #expect(node.received == 1, "the job was sent once")
            #expect(node.cancels.isEmpty)
            #expect(health.all.isEmpty)
            // No work in flight: the ping loop ends.
            try await awaitState { !remote.peer.isWatchingLiveness }
        }
    }

    @Test func whenThePeerStopsAnsweringPingsEveryPendingTaskFailsAtOnceAndItIsHeldBackUntilItAnswers() async throws {
        try await withRemote { node, remote, health in
            let runs = (0..<3).map { input in Task { try await remote.run(slowTask(input)) } }
            try await awaitState { node.held.count == 3 }
            let pongsBefore = node.pongs
            try await awaitState { node.pongs > pongsBefore }  // the liveness loop runs
            let clock = ContinuousClock()
            node.answerPings(false)
            let silent = clock.now
            for run in runs {
                let error = await #expect(throws: PeerUnresponsive.self) { try await run.value }
                #expect(error?.description == "beta did not answer a ping within 0.3 s")
            }
            let waited = clock.now - silent
            // The tasks have no time limit of their own: without the ping's they wait for ever.
            // The margin is for a loaded machine (2.6 s seen at a load average of 25).
            #expect(waited < timeout + .seconds(5), "failed after \(waited)")
            try await awaitState { health.all == [false] }
            // Each failed request is cancelled on the node, should it still be there.
            try await awaitState { node.cancels.count == 3 }
            node.answerPings(true)
            try await awaitState { health.all == [false, true] }
        }
    }

    @Test func theBuiltInScanStillFailsAtTheTimeout() async throws {
        try await withRemote { node, remote, health in
            let clock = ContinuousClock(), start = clock.now
            await #expect(throws: TimeoutError.self) { try await remote.run(ScanTask(input: 1, duration: 30)) }
            let waited = clock.now - start
            #expect(waited >= timeout && waited < timeout + .seconds(3), "failed after \(waited)")
            #expect(node.received == 1)
            #expect(!remote.peer.isWatchingLiveness, "a scan alone starts no liveness loop")
            try await awaitState { node.cancels.count == 1 }
            try await awaitState { health.all.first == false }
        }
    }

    @Test func aJobWithADeadlineIsBoundedByItsDeadlineAndTheMargin() async throws {
        try await withRemote(deadlineMargin: .milliseconds(200)) { node, remote, health in
            let clock = ContinuousClock(), start = clock.now
            let error = await #expect(throws: ScanFailure.self) { try await remote.run(slowTask(4, timeout: 1)) }
            let waited = clock.now - start
            #expect(error?.code == "deadline")
            #expect(error?.message == "beta gave no answer within its deadline of 1 s and a margin of 0.2 s")
            #expect(waited >= .milliseconds(1200) && waited < .seconds(4), "failed after \(waited)")
            #expect(node.pongs >= 2, "pinged meanwhile")
            try await awaitState { node.cancels.count == 1 }
            #expect(health.all.isEmpty, "a deadline says nothing of the peer's liveness")
        }
    }
}
