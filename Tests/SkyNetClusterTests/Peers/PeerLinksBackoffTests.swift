import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
import Testing

/// A peer that welcomes a coordinator and drops the link at once is redialled with backoff,
/// not in a hot loop.
@Suite(.timeLimit(.minutes(3)))
struct PeerLinksBackoffTests {
    @Test func aPeerThatWelcomesAndHangsUpIsRedialledWithBackoff() async throws {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        let accepted = Counter()
        try listener.start { socket, _ in
            accepted.increment()
            let welcome = Reply.welcome(version: 1, name: "flaky", capacity: 4, jobs: nil).line
            _ = try? socket.send(welcome, wait: true)
            socket.close()
        }
        defer { listener.stop() }
        let systems = Systems()
        let cluster = ClusterConfig(nodes: [.init(name: "flaky", port: listener.port)])
        let links = PeerLinks(cluster: cluster, systems: systems, settings: .init(capacity: 4, timeout: .seconds(5))) { _ in }
        // Waits for the third link, then counts the links of a two-second window (a window of
        // time, not a sleep that orders events: the count only grows).
        try await accepted.wait(untilAtLeast: 3)
        try await Task.sleep(for: .seconds(2))
        await links.stop()
        // Backoff of 100 ms doubling to 2 s allows about 6 links in those two seconds; the hot
        // loop it replaces made hundreds.
        #expect(accepted.value < 20, "\(accepted.value) links in about 2 s")
    }

    /// The waits between dials of a peer that never welcomes, on the links' own clock: the
    /// first after one failure, doubling with each failure in a row, never past the most. No
    /// dial comes before its wait is over, and each comes once it is.
    @Test func aPeerThatNeverWelcomesIsRedialledAfterWaitsThatDoubleToTheMost() async throws {
        let listener = try await Listener.bind(host: "127.0.0.1", port: 0)
        let accepted = Counter()
        try listener.start { socket, _ in
            accepted.increment()
            socket.close()
        }
        defer { listener.stop() }
        let clock = ManualClock()
        var settings = PeerLinks.Settings(capacity: 1, timeout: .seconds(60))
        settings.retryDelays = Backoff(first: .seconds(1), most: .seconds(4))
        settings.clock = clock
        let cluster = ClusterConfig(nodes: [.init(name: "mute", port: listener.port)])
        let links = PeerLinks(cluster: cluster, systems: Systems(), settings: settings) { _ in }
        do {
            try await accepted.wait(untilAtLeast: 1, upTo: .seconds(60))
            for (dials, wait) in [(1, 1), (2, 2), (3, 4), (4, 4), (5, 4)] {
                await clock.waitUntilPending(at: clock.now + .seconds(wait))
                clock.advance(by: .seconds(wait) - .milliseconds(1))
                #expect(accepted.value == dials, "a dial came before its wait of \(wait) s was over")
                clock.advance(by: .milliseconds(1))
                try await accepted.wait(untilAtLeast: dials + 1, upTo: .seconds(60))
            }
        } catch {
            await links.stop()
            throw error
        }
        await links.stop()
    }
}
