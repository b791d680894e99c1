import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork
import SkyNetTestSupport

/// A request's time limit lives on its link's clock (`DeadlineTimer.shared` unless a test gives
/// a `ManualClock`): it fails a request nobody answers with `TimeoutError` at its timeout, a late reply is dropped, a reply (or the end of
/// the link, or a cancellation) removes the timer entry, and the end of the link fails what is
/// pending at once. Whether an entry is still pending is read from the request's own ticket
/// (kept in the pending table while the fake node holds the request): `cancel` says true only
/// for an entry that was still there, and these tickets are ours, so cancelling them touches
/// no other test's timer entries.
@Suite(.timeLimit(.minutes(3)))
struct PeerRequestTimeoutTests {
    /// What "after about its timeout" and "at once" allow: generous, for the full test run
    /// shares two cores with other work (the pool stalled for up to 4 s at a load average of
    /// 12). The limits these tests tell apart are 60 s, or for ever.
    let soon: Duration = .seconds(10)

    /// Runs `body` with a fake node (it holds every task until told to answer) and a link to
    /// it; both closed on every path.
    func withPeer<T>(clock: any TimerClock = DeadlineTimer.shared, _ body: (FakeNode, PeerConnection) async throws -> T) async throws -> T {
        let node = try await FakeNode.start()
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port,
                                                 token: nil, timeout: .seconds(5), clock: clock)
        defer { peer.close() }
        return try await body(node, peer)
    }

    /// The time-limit tickets of the pending requests `ids` (nil for one without).
    func tickets(of ids: [Int], on peer: PeerConnection) -> [TimerTicket?] {
        peer.state.withLock { state in ids.map { state.pending[$0]?.deadline } }
    }

    /// How many of `tickets` were still pending on the shared timer (and are not any more).
    func stillPending(_ tickets: [TimerTicket]) -> Int {
        tickets.filter { DeadlineTimer.shared.cancel($0) }.count
    }

    /// Sends a scan of `input` as request `id` and returns its result.
    func scan(_ input: Int, id: Int, on peer: PeerConnection, timeout: Duration) async throws -> String {
        let reply = try await peer.request(id: id, .scan(id: id, task: ScanTask(input: input)), timeout: timeout)
        guard case .result(_, _, let result) = reply else { throw ScanFailure(code: "bad-reply", message: "\(reply)") }
        return result
    }

    /// On a manual clock: each request is still pending a moment before its timeout and fails
    /// with `TimeoutError` at it, the shortest first.
    @Test func aRequestNobodyAnswersFailsWithTimeoutErrorAfterItsTimeout() async throws {
        let clock = ManualClock(), start = clock.now
        try await withPeer(clock: clock) { node, peer in
            let timeouts: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400)]
            let requests = timeouts.enumerated().map { input, timeout in
                Task { try await scan(input, id: peer.nextID(), on: peer, timeout: timeout) }
            }
            for timeout in timeouts { await clock.waitUntilPending(at: start + timeout) }
            try await awaitState { node.received == 3 }
            for (index, timeout) in timeouts.enumerated() {
                clock.advance(by: start + timeout - .milliseconds(1) - clock.now)
                #expect(peer.state.withLock { $0.pending.count } == timeouts.count - index, "none failed before its timeout")
                clock.advance(by: .milliseconds(1))
                await #expect(throws: TimeoutError.self) { try await requests[index].value }
            }
            #expect(node.received == 3)
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }

    @Test func aLateReplyAfterTheTimeoutIsDroppedAndTheNextRequestGetsItsOwn() async throws {
        try await withPeer { node, peer in
            let late = peer.nextID()
            await #expect(throws: TimeoutError.self) { try await scan(1, id: late, on: peer, timeout: .milliseconds(100)) }
            // On a loaded machine the request may reach the node after its 100 ms: awaited.
            try await node.waitUntilHolding(1)
            #expect(node.answerHeld() == 1)  // the reply to the request that timed out
            let next = peer.nextID()
            let result = Task { try await scan(2, id: next, on: peer, timeout: .seconds(10)) }
            try await node.waitUntilHolding(1)
            node.answerHeld()
            // The late reply came first on the link and was dropped: this one is request 2's.
            #expect(try await result.value == "done 2")
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }

    /// Replies and time limits of a few milliseconds race: each request ends once, with its
    /// own result or with `TimeoutError` (a second resume would crash the test process).
    @Test func repliesRacingTheirTimeLimitsEndEachRequestOnce() async throws {
        try await withPeer { node, peer in
            let count = 300
            let answering = Task {
                while !Task.isCancelled {
                    node.answerHeld()
                    // A millisecond's sleep (a yield loop spun on the pool): replies still
                    // race time limits of 1 to 40 ms.
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            defer { answering.cancel() }
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for input in 0..<count {
                    group.addTask {
                        do {
                            // 1 to 40 ms: about half are answered first, half time out first.
                            let result = try await scan(input, id: peer.nextID(), on: peer, timeout: .milliseconds(1 + input % 40))
                            #expect(result == "done \(input)")
                            return true
                        } catch is TimeoutError {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.count == count)
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }

    /// A reply cancels its request's timer entry: ten thousand quick requests with a 60 s
    /// limit leave none behind (else they would all fire a minute later).
    @Test func tenThousandAnsweredRequestsLeaveNoTimerEntryBehind() async throws {
        try await withPeer { node, peer in
            let batches = 20, perBatch = 500
            var leftBehind = 0, answered = 0
            for batch in 0..<batches {
                let ids = (0..<perBatch).map { _ in peer.nextID() }
                let requests = ids.enumerated().map { index, id in
                    Task { try await scan(batch * perBatch + index, id: id, on: peer, timeout: .seconds(60)) }
                }
                try await node.waitUntilHolding(perBatch)
                let held = tickets(of: ids, on: peer)
                #expect(held.allSatisfy { $0 != nil }, "every request has its time limit on the timer")
                node.answerHeld()
                for (index, request) in requests.enumerated() {
                    #expect(try await request.value == "done \(batch * perBatch + index)")
                    answered += 1
                }
                leftBehind += stillPending(held.compactMap { $0 })
            }
            #expect(answered == batches * perBatch)
            #expect(leftBehind == 0, "\(leftBehind) timer entries outlived their requests")
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }

    /// `RemoteSystem.run` bounds a scan by a time limit on the timer, and its reply removes it.
    @Test func remoteScansCarryTheirTimeLimitOnTheTimerAndTheirRepliesRemoveIt() async throws {
        try await withPeer { node, peer in
            let remote = RemoteSystem(name: "beta", peer: peer, timeout: .seconds(60))
            let count = 200
            let runs = (0..<count).map { input in Task { try await remote.run(ScanTask(input: input)) } }
            try await node.waitUntilHolding(count)
            let held = peer.state.withLock { $0.pending.values.map(\.deadline) }
            #expect(held.count == count)
            #expect(held.allSatisfy { $0 != nil })
            node.answerHeld()
            for (input, run) in runs.enumerated() { #expect(try await run.value == "done \(input)") }
            #expect(stillPending(held.compactMap { $0 }) == 0)
        }
    }

    @Test func aLinkThatEndsFailsItsPendingRequestsWithPeerDisconnectedAtOnce() async throws {
        try await withPeer { node, peer in
            let ids = (0..<5).map { _ in peer.nextID() }
            let requests = ids.enumerated().map { input, id in
                Task { try await scan(input, id: id, on: peer, timeout: .seconds(60)) }
            }
            try await node.waitUntilHolding(ids.count)
            let held = tickets(of: ids, on: peer).compactMap { $0 }
            #expect(held.count == ids.count)
            let clock = ContinuousClock(), ended = clock.now
            node.stop()
            // One bound for all: far below the 60 s limit, which must not be what ends them.
            let outcomes = try await withTimeout(soon * 2) {
                var outcomes: [String] = []
                for request in requests {
                    do {
                        outcomes.append("answered \(try await request.value)")
                    } catch {
                        outcomes.append("\(type(of: error))")
                    }
                }
                return outcomes
            }
            #expect(outcomes == Array(repeating: "PeerDisconnected", count: ids.count))
            #expect(clock.now - ended < soon, "failed after \(clock.now - ended), not at once")
            #expect(stillPending(held) == 0, "the end removed their time limits")
            // A request on the ended link fails at once, too.
            await #expect(throws: PeerDisconnected.self) {
                try await withTimeout(soon) { try await scan(9, id: peer.nextID(), on: peer, timeout: .seconds(60)) }
            }
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }

    @Test func aCancelledRequestForgetsItsTimeLimit() async throws {
        try await withPeer { node, peer in
            let id = peer.nextID()
            let request = Task { try await scan(1, id: id, on: peer, timeout: .seconds(60)) }
            try await node.waitUntilHolding(1)
            let held = try #require(tickets(of: [id], on: peer).first ?? nil)
            request.cancel()
            await #expect(throws: CancellationError.self) {
                try await withTimeout(soon) { try await request.value }
            }
            #expect(stillPending([held]) == 0)
            #expect(peer.state.withLock { $0.pending.isEmpty })
        }
    }
}
