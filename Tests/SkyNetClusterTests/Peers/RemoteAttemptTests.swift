import Dispatch
import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
@testable import SkyNetWork
import SkyNetTestSupport

/// An attempt on a peer with no task of its own (`RemoteSystem.start`): its request goes out,
/// its callback gets what `run` would return or throw, and stopping it cancels it on the
/// node; one stopped before its line left the loop never reaches the node.
@Suite(.timeLimit(.minutes(2)))
struct RemoteAttemptTests {
    /// Runs `body` with a fake node (it holds every task until told to answer) and a peer
    /// system linked to it; both closed on every path.
    func withRemote(_ body: (FakeNode, RemoteSystem) async throws -> Void) async throws {
        let node = try await FakeNode.start()
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: nil, timeout: .seconds(5))
        defer { peer.close() }
        try await body(node, RemoteSystem(name: "beta", peer: peer, timeout: .seconds(60)))
    }

    /// What each attempt's callback got, by input: its result, or the type of its error.
    final class Outcomes: Sendable {
        private let outcomes = Watched([Int: String]())

        func done(_ input: Int) -> @Sendable (Result<String, any Error>) -> Void {
            { [outcomes] result in
                let outcome = switch result {
                case .success(let value): value
                case .failure(let error): "\(type(of: error))"
                }
                outcomes.update { $0[input, default: ""] += outcome }  // twice would show as two joined
            }
        }

        var value: [Int: String] { outcomes.value }

        func wait(for count: Int) async throws {
            try await outcomes.wait(upTo: .seconds(30)) { $0.count >= count }
        }
    }

    @Test func startedAttemptsGetTheirResultsOnce() async throws {
        try await withRemote { node, remote in
            let outcomes = Outcomes()
            for input in 0..<200 { #expect(remote.start(ScanTask(input: input), done: outcomes.done(input)) != nil) }
            try await node.waitUntilHolding(200)
            #expect(outcomes.value.isEmpty)
            node.answerHeld()
            try await outcomes.wait(for: 200)
            #expect(outcomes.value == Dictionary(uniqueKeysWithValues: (0..<200).map { ($0, "done \($0)") }))
            #expect(remote.peer.state.withLock { $0.pending.isEmpty })
        }
    }

    @Test func stoppingAStartedAttemptCancelsItOnTheNode() async throws {
        try await withRemote { node, remote in
            let outcomes = Outcomes()
            let attempts = try (0..<5).map { input in try #require(remote.start(ScanTask(input: input), done: outcomes.done(input))) }
            try await node.waitUntilHolding(5)
            for attempt in attempts { attempt.cancel() }
            try await outcomes.wait(for: 5)
            #expect(outcomes.value == Dictionary(uniqueKeysWithValues: (0..<5).map { ($0, "CancellationError") }))
            try await node.waitUntilHolding(0)  // each cancelled on the node
            #expect(node.cancels.count == 5)
            attempts.forEach { $0.cancel() }  // once more: nothing more happens
            #expect(outcomes.value.values.allSatisfy { $0 == "CancellationError" })
        }
    }

    /// The line of an attempt leaves from the link's loop; stopped before the loop got to it,
    /// the attempt is never sent (the node would run a task nobody waits for).
    @Test func anAttemptStoppedBeforeItsLineLeftIsNeverSent() async throws {
        try await withRemote { node, remote in
            let loop = try #require(remote.peer.connection.eventLoop)
            let blocked = DispatchSemaphore(value: 0), holding = AsyncSignal<Void>()
            loop.execute {
                holding.fulfil(())
                blocked.wait()  // the loop's own thread, not the pool's: held for this test only
            }
            await holding.value
            let outcomes = Outcomes()
            let stopped: (any StartedAttempt)?
            do {
                defer { blocked.signal() }
                stopped = remote.start(ScanTask(input: 1), done: outcomes.done(1))
                stopped?.cancel()
            }
            #expect(stopped != nil)
            // A later attempt on the same link: once it arrives, the first would have too.
            #expect(remote.start(ScanTask(input: 2), done: outcomes.done(2)) != nil)
            try await node.waitUntilHolding(1)
            #expect(node.received == 1)
            node.answerHeld()
            try await outcomes.wait(for: 2)
            #expect(outcomes.value == [1: "CancellationError", 2: "done 2"])
        }
    }
}
