@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// What a request leaves on the shared timer: answered and cancelled requests leave no time
/// limit behind, and a late reply to a timed-out request is dropped.
extension PeerRequestTimeoutTests {
    /// A time limit no other test uses, to find our entries on the shared timer.
    static let probeLimit: Duration = .seconds(987)

    static func ours() -> Int {
        let now = ContinuousClock.now
        return TimerProbe.pending(.shared).deadlines.filter { $0 > now + .seconds(900) && $0 < now + .seconds(1000) }.count
    }

    @Test func answeredAndCancelledRequestsLeaveNoTimeLimitOnTheTimer() async throws {
        let node = try await FakeNode.start()
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: nil, timeout: .seconds(5))
        defer { peer.close() }
        let before = Self.ours()
        // Answered requests.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for input in 0..<300 {
                group.addTask {
                    let id = peer.nextID()
                    _ = try await peer.request(id: id, .scan(id: id, task: ScanTask(input: input, duration: 0)), timeout: Self.probeLimit)
                }
            }
            group.addTask {
                try await withTimeout(.seconds(20)) {
                    var answered = 0
                    while answered < 300 {
                        try await node.waitUntilHolding(atLeast: 1)
                        answered += node.answerHeld()
                    }
                }
            }
            try await group.waitForAll()
        }
        // Cancelled requests.
        let requests = (0..<100).map { input in
            Task {
                let id = peer.nextID()
                return try await peer.request(id: id, .scan(id: id, task: ScanTask(input: input, duration: 0)), timeout: Self.probeLimit)
            }
        }
        try await node.waitUntilReceived(400)
        #expect(Self.ours() >= before + 100)  // the probe sees the time limits while they are pending
        for request in requests { request.cancel() }
        for request in requests { _ = await request.result }
        #expect(Self.ours() <= before)
    }

    @Test func aRequestWithNoReplyFailsWithTimeoutErrorAndItsLateReplyIsDropped() async throws {
        let node = try await FakeNode.start()
        defer { node.stop() }
        // The limits that must not pass are generous (a full run stalled this one's pool past
        // 5 s); only the 200 ms one is meant to.
        let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: nil, timeout: .seconds(30))
        defer { peer.close() }
        let start = ContinuousClock.now
        let id = peer.nextID()
        await #expect(throws: TimeoutError.self) {
            _ = try await peer.request(id: id, .scan(id: id, task: ScanTask(input: 1, duration: 0)), timeout: .milliseconds(200))
        }
        let took = ContinuousClock.now - start
        #expect(took >= .milliseconds(200) && took < .seconds(30))  // loose: a loaded pool resumes late
        // On a loaded machine the request may reach the node after its 200 ms: awaited, so that
        // the reply is late whatever the timing.
        try await node.waitUntilHolding(1)
        #expect(node.answerHeld() == 1)  // the late reply finds nobody waiting
        let next = peer.nextID()
        async let reply = peer.request(id: next, .scan(id: next, task: ScanTask(input: 2, duration: 0)), timeout: .seconds(30))
        try await node.waitUntilHolding(1)
        node.answerHeld()
        #expect((try await reply).requestID == next)
    }
}
