import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// A coordinator's links use only peers whose welcome lists the scan's job and run it as the
/// same command (compared word by word), unless told to allow a mismatch.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PeerLinksJobTests {
    let nodeTests = NodeHarness()

    final class Events: Sendable {
        private let events = Watched<[ClusterEvent]>([])
        func append(_ event: ClusterEvent) { events.update { $0.append(event) } }
        var all: [ClusterEvent] { events.value }
        /// Returns once an event for which `matches` holds arrived; throws after `limit`.
        func waitFor(upTo limit: Duration = .seconds(30), _ matches: @escaping @Sendable (ClusterEvent) -> Bool) async throws {
            try await events.wait(upTo: limit) { $0.contains(where: matches) }
        }
        var lines: [String] { all.map(\.description) }
    }

    /// A node named `name` that declares `sum` as `summary` (nil: not at all); `connections`
    /// counts the hellos it welcomed.
    func startNode(_ name: String, sum summary: String?, connections: Counter = Counter()) async throws -> Node {
        var options = Node.Options(name: name)
        options.failingEvery = 0
        // Not the default 3 s: under the thread sanitizer with other builds running, a hello
        // once waited longer than that for the pool, and the node cut the link before the job
        // comparison this suite is about.
        options.helloTimeout = .seconds(30)
        if let summary { try options.jobs.register("sum", summary: summary) { "\($0.input):\(summary)" } }
        return try await Node.start(options) { line in if line.hasPrefix("[Node] Connected:") { connections.increment() } }
    }

    func withLinks<T>(
        to nodes: [Node], settings: PeerLinks.Settings, _ body: (PeerLinks, Systems, Events) async throws -> T
    ) async throws -> T {
        let systems = Systems(), events = Events()
        let cluster = ClusterConfig(nodes: nodes.map { .init(name: $0.options.name, port: $0.port) })
        let links = PeerLinks(cluster: cluster, systems: systems, settings: settings) { events.append($0) }
        func stopAll() async {
            await links.stop()
            for node in nodes { await node.stop(grace: .seconds(1)) }
        }
        do {
            let result = try await body(links, systems, events)
            await stopAll()
            return result
        } catch {
            await stopAll()
            throw error
        }
    }

    func settings(jobSummary: String?) -> PeerLinks.Settings {
        var settings = PeerLinks.Settings(capacity: 2, timeout: .seconds(5), job: "sum", jobSummary: jobSummary)
        settings.refusalRetryDelay = .milliseconds(100)
        return settings
    }

    @Test func aPeerWithoutTheJobOrWithAnotherCommandIsReportedOnceAndNotUsed() async throws {
        let askedDelta = Counter(), askedGamma = Counter()
        let nodes = [
            try await startNode("beta", sum: "sha256sum {}"),
            try await startNode("gamma", sum: "md5sum {}", connections: askedGamma),
            try await startNode("delta", sum: nil, connections: askedDelta),
        ]
        try await withLinks(to: nodes, settings: settings(jobSummary: "sha256sum {}")) { links, systems, events in
            // Asked again (rarely in real life; every 0.1 s here), but reported once only.
            try await askedDelta.wait(untilAtLeast: 3)
            try await askedGamma.wait(untilAtLeast: 3)
            #expect(await systems.names == ["beta"])
            #expect(events.lines.filter { $0.contains("delta") } == ["[Cluster] Lacks job: delta has no job 'sum' (its jobs: scan)"])
            #expect(events.lines.filter { $0.contains("gamma") } == [
                "[Cluster] Job differs: gamma runs job 'sum' as 'md5sum {}', not 'sha256sum {}'; not used (--allow-job-mismatch uses it)",
            ])
            #expect(links.everyPeerRefused.current == nil)
        }
    }

    @Test func aPeerWhoseCommandIsTheSameWordsQuotedOtherwiseIsUsedWithoutAWarning() async throws {
        let nodes = [try await startNode("beta", sum: "'echo'  {}"), try await startNode("gamma", sum: #"echo "{}""#)]
        try await withLinks(to: nodes, settings: settings(jobSummary: "echo {}")) { _, systems, events in
            try await awaitState { await Set(systems.names) == ["beta", "gamma"] }
            #expect(events.lines.filter { !$0.hasPrefix("[Cluster] Connected: ") } == [])
        }
    }

    @Test func whenTheScanAllowsAMismatchAPeerThatDiffersIsWarnedAboutOnceAndUsed() async throws {
        let nodes = [try await startNode("beta", sum: "sha256sum {}"), try await startNode("gamma", sum: "md5sum {}")]
        var settings = settings(jobSummary: "sha256sum {}")
        settings.allowJobMismatch = true
        try await withLinks(to: nodes, settings: settings) { _, systems, events in
            try await awaitState { await Set(systems.names) == ["beta", "gamma"] }
            #expect(events.lines.filter { $0.contains("Warning") } == [
                "[Cluster] Warning: gamma runs job 'sum' as 'md5sum {}', not 'sha256sum {}'",
            ])
        }
    }

    @Test func whenEveryPeerRunsAnotherCommandTheLinksSaySoOnce() async throws {
        let nodes = [try await startNode("beta", sum: "md5sum {}"), try await startNode("gamma", sum: "b2sum {}")]
        try await withLinks(to: nodes, settings: settings(jobSummary: "sha256sum {}")) { links, systems, _ in
            let reason = try await withTimeout(.seconds(10)) { await links.everyPeerRefused.value }
            #expect(reason == "no peer runs the job 'sum' as 'sha256sum {}' (give --allow-job-mismatch to use them anyway)")
            #expect(await systems.names.isEmpty)
        }
    }

    @Test func withoutAJobOfItsOwnTheCoordinatorComparesThePeersWithTheFirst() async throws {
        let nodes = [try await startNode("beta", sum: "sha256sum {}"), try await startNode("gamma", sum: "md5sum {}")]
        try await withLinks(to: nodes, settings: settings(jobSummary: nil)) { _, systems, events in
            try await events.waitFor { if case .jobDiffers = $0 { true } else { false } }
            try await awaitState { await systems.names.count == 1 }
            let warnings = events.all.filter { if case .jobDiffers = $0 { true } else { false } }
            #expect(warnings.count == 1, "\(events.lines)")
            // The one that differs is the one not used.
            #expect(await systems.names != warnings.map(\.peer))
        }
    }

    @Test func whenEveryPeerLacksTheJobTheLinksSaySoOnce() async throws {
        let nodes = [try await startNode("beta", sum: nil), try await startNode("gamma", sum: nil)]
        try await withLinks(to: nodes, settings: settings(jobSummary: "sha256sum {}")) { links, systems, _ in
            let reason = try await withTimeout(.seconds(10)) { await links.everyPeerRefused.value }
            #expect(reason == "no peer has the job 'sum' (declare it on the nodes: skynet node --job 'sum=COMMAND')")
            #expect(await systems.names.isEmpty)
        }
    }

    @Test func theBuiltInScanIsOnEveryPeerIncludingAV1One() async throws {
        // A v1 node's welcome lists no jobs: it runs the built-in scan and nothing else.
        let v1 = PeerConnection.Welcome(name: "old", capacity: 4, jobs: nil)
        let check = PeerLinks.JobCheck(job: JobRegistry.scan, expected: "built-in simulated scan")
        guard case .usable = check.check(v1, of: "old") else { Issue.record("a v1 node runs the scan"); return }
        let sum = PeerLinks.JobCheck(job: "sum", expected: nil)
        guard case .unusable(let event) = sum.check(v1, of: "old") else { Issue.record("a v1 node has no job 'sum'"); return }
        #expect(event.description == "[Cluster] Lacks job: old has no job 'sum' (its jobs: scan)")
    }
}
