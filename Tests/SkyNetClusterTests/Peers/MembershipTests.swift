import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
import SkyNetTransport
@testable import SkyNetWork
import Testing

/// An address group of cluster.json: its members follow what the name resolves to,
/// here an injected resolver, while a scan runs. The nodes listen on 127.0.0.1, .2 and .3 with
/// one port (a group has one port): the whole of 127.0.0.0/8 is loopback on Linux.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MembershipTests {
    typealias Events = PeerLinksJobTests.Events

    /// What the test's resolver answers: a list of addresses, or a failure; counts the lookups.
    final class Answers: Sendable {
        private let state = Watched<(answer: Result<[String], ResolverDown>, lookups: Int)>((.success([]), 0))
        struct ResolverDown: Error, CustomStringConvertible { var description: String { "resolver down" } }

        func set(_ addresses: [String]) { state.update { $0.answer = .success(addresses) } }
        var current: [String] { (try? state.value.answer.get()) ?? [] }
        func fail() { state.update { $0.answer = .failure(ResolverDown()) } }

        func resolve(_ host: String, _ port: Int) throws -> [String] {
            try state.update { state in
                state.lookups += 1
                return state.answer
            }.get()
        }

        /// Returns once `count` more lookups were made than when called.
        func waitForLookups(_ count: Int) async throws {
            let start = state.value.lookups
            try await state.wait(upTo: .seconds(10)) { $0.lookups >= start + count }
        }
    }

    /// Three nodes on 127.0.0.1…3, one port, each running `hold` (DrainGate) in one slot.
    /// The port is the one 127.0.0.1 was given, free there but not always on .2 or .3 (another
    /// socket on the machine may hold it there): then the three start again on another port.
    func startNodes() async throws -> [Node] {
        var attempt = 0
        while true {
            attempt += 1
            var nodes: [Node] = []
            do {
                for index in 1...3 {
                    var options = Node.Options(name: "n\(index)")
                    options.host = "127.0.0.\(index)"
                    options.port = nodes.first?.port ?? 0
                    options.capacity = 1
                    options.failingEvery = 0
                    try DrainGate.register(in: &options.jobs)
                    nodes.append(try await Node.start(options))
                }
                return nodes
            } catch let error as SocketError where error.code == EADDRINUSE && attempt < 10 {
                await stop(nodes)
            } catch {
                await stop(nodes)
                throw error
            }
        }
    }

    func withGroup<T>(
        _ answers: Answers, port: Int, _ body: (Systems, Events) async throws -> T
    ) async throws -> T {
        var group = ClusterConfig.Node(name: "g", host: "nodes.test", port: port)
        group.everyAddress = true
        group.refresh = 0.05
        var settings = PeerLinks.Settings(capacity: 1, timeout: .seconds(5), job: "hold", jobSummary: "cat {}")
        settings.resolve = { host, port in try answers.resolve(host, port) }
        let systems = Systems(), events = Events()
        let links = PeerLinks(cluster: ClusterConfig(nodes: [group]), systems: systems, settings: settings) { events.append($0) }
        do {
            let result = try await body(systems, events)
            await links.stop()
            return result
        } catch {
            await links.stop()
            throw error
        }
    }

    func stop(_ nodes: [Node]) async {
        for node in nodes { await node.stop(grace: .seconds(1)) }
    }

    @Test func aNewAddressJoinsAndAGoneOneDrainsWithItsTaskDone() async throws {
        let gate = try DrainGate.make(3)
        defer { gate.remove() }
        let nodes = try await startNodes()
        let answers = Answers()
        answers.set(["127.0.0.1", "127.0.0.2"])
        try await withGroup(answers, port: nodes[0].port) { systems, events in
            try await awaitState(upTo: .seconds(60)) { await Set(systems.names) == ["g/127.0.0.1", "g/127.0.0.2"] }
            #expect(events.lines.contains("[Cluster] Found: g/127.0.0.1 (an address of nodes.test)"))

            answers.set(["127.0.0.1", "127.0.0.2", "127.0.0.3"])
            try await awaitState(upTo: .seconds(60)) { await systems.names.count == 3 }
            let scanEvents = EventLog()
            let coordinator = Coordinator(systems: systems) { scanEvents.append($0) }
            let scan = Task { await coordinator.run((0..<3).map { gate.task($0) }) }
            defer { scan.cancel() }
            try await awaitState(upTo: .seconds(60)) { nodes.allSatisfy { $0.system.counters.running == 1 } }

            // .2 leaves: drained while its task runs, unlinked once that task is done.
            answers.set(["127.0.0.1", "127.0.0.3"])
            try await events.waitFor(upTo: .seconds(60)) { if case .draining("g/127.0.0.2", _) = $0 { true } else { false } }
            #expect(await systems.slotUse.first { $0.name == "g/127.0.0.2" }?.draining == true)
            #expect(!events.all.contains { if case .disconnected("g/127.0.0.2", _) = $0 { true } else { false } })
            for index in 0..<3 { try await gate.release(index) }
            let report = try await withTimeout(.seconds(30)) { await scan.value }
            try await events.waitFor(upTo: .seconds(60)) { if case .disconnected("g/127.0.0.2", _) = $0 { true } else { false } }

            #expect(report.completed == 3)
            #expect(report.gaveUp == 0)
            #expect(report.reruns == 0)
            #expect(report.systems["g/127.0.0.3"]?.completed == 1)
            #expect(report.systems["g/127.0.0.2"]?.completed == 1)
            #expect(report.systems["g/127.0.0.2"]?.failed ?? 0 == 0)
            try await awaitState(upTo: .seconds(60)) { await Set(systems.names) == ["g/127.0.0.1", "g/127.0.0.3"] }
            #expect(events.lines.contains("[Cluster] Draining: g/127.0.0.2 (no longer an address of nodes.test)"))
            // The coordinator let go of the node; the node itself keeps serving.
            #expect(nodes[1].phase == .accepting)
        }
        await stop(nodes)
    }

    @Test func anErrorOrAnEmptyAnswerKeepsTheMembers() async throws {
        let nodes = try await startNodes()
        let answers = Answers()
        answers.set(["127.0.0.1", "127.0.0.2"])
        try await withGroup(answers, port: nodes[0].port) { systems, events in
            try await awaitState(upTo: .seconds(10)) { await systems.names.count == 2 }
            answers.fail()
            try await answers.waitForLookups(3)
            answers.set([])
            try await answers.waitForLookups(3)
            #expect(Set(await systems.names) == ["g/127.0.0.1", "g/127.0.0.2"])
            #expect(!events.all.contains { if case .draining = $0 { true } else { false } })
            // Said once, until the name resolves again.
            #expect(events.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") && $0.contains("nodes.test") }.count == 1)
        }
        await stop(nodes)
    }

    @Test func anAddressThatReturnsWhileItDrainsIsUndrained() async throws {
        let gate = try DrainGate.make(1)
        defer { gate.remove() }
        let nodes = try await startNodes()
        let answers = Answers()
        answers.set(["127.0.0.1"])
        try await withGroup(answers, port: nodes[0].port) { systems, events in
            try await awaitState(upTo: .seconds(10)) { await systems.names == ["g/127.0.0.1"] }
            let coordinator = Coordinator(systems: systems) { _ in }
            let scan = Task { await coordinator.run([gate.task(0)]) }
            defer { scan.cancel() }
            try await awaitState(upTo: .seconds(10)) { nodes[0].system.counters.running == 1 }

            answers.set(["127.0.0.2"])
            try await events.waitFor(upTo: .seconds(10)) { if case .draining("g/127.0.0.1", _) = $0 { true } else { false } }
            answers.set(["127.0.0.1", "127.0.0.2"])
            try await awaitState(upTo: .seconds(10)) {
                await systems.slotUse.first { $0.name == "g/127.0.0.1" }?.draining == false
            }
            try await gate.release(0)
            let report = try await withTimeout(.seconds(30)) { await scan.value }
            #expect(report.completed == 1)
            try await answers.waitForLookups(3)
            // The new address's link registers once its dial and handshake are done: awaited.
            try await awaitState(upTo: .seconds(10)) { Set(await systems.names) == ["g/127.0.0.1", "g/127.0.0.2"] }
            #expect(!events.all.contains { if case .disconnected("g/127.0.0.1", _) = $0 { true } else { false } })
            // Its return is said (the board and the progress line show it taking work again),
            // and its leave's wait for idle was cancelled, not left parked.
            #expect(events.lines.contains("[Cluster] Returned: g/127.0.0.1 (an address of nodes.test again)"))
            #expect(await systems.idleWaiterCount == 0)
        }
        await stop(nodes)
    }

    /// A member whose node went away, then whose address left: its link said `disconnected`
    /// once; the leave says nothing more (it said `draining` and `disconnected` again, and the
    /// progress line's count of systems went down twice).
    @Test func aMemberDownBeforeItsAddressLeavesIsReportedGoneOnce() async throws {
        let nodes = try await startNodes()
        let answers = Answers()
        answers.set(["127.0.0.1", "127.0.0.2"])
        try await withGroup(answers, port: nodes[0].port) { systems, events in
            try await awaitState(upTo: .seconds(10)) { await systems.names.count == 2 }
            await nodes[0].stop(grace: .seconds(1))
            try await events.waitFor(upTo: .seconds(10)) { if case .disconnected("g/127.0.0.1", _) = $0 { true } else { false } }
            answers.set(["127.0.0.2"])
            try await answers.waitForLookups(5)
            let about = events.all.filter { $0.peer == "g/127.0.0.1" }
            #expect(about.filter { if case .disconnected = $0 { true } else { false } }.count == 1, "\(about)")
            #expect(!about.contains { if case .draining = $0 { true } else { false } }, "\(about)")
        }
        await stop(nodes)
    }

    /// A name that resolves to more addresses than a group may have gives the first ones, in
    /// sorted order, and says so once.
    @Test func aGroupHasAtMostItsBoundOfMembersAndSaysSoOnce() async throws {
        let answers = Answers()
        // 300 loopback addresses where nothing listens: each member's link is refused, quickly.
        answers.set((0..<300).map { "127.1.\($0 / 200).\($0 % 200 + 1)" }.shuffled())
        try await withGroup(answers, port: 9) { _, events in
            try await answers.waitForLookups(4)
            let found = events.all.filter { if case .discovered = $0 { true } else { false } }
            #expect(found.count == ClusterConfig.maxGroupMembers)
            #expect(Set(found.map(\.peer)) == Set(ClusterConfig.groupMembers(of: answers.current).map { "g/\($0)" }))
            let warnings = events.lines.filter { $0.hasPrefix("[Cluster] Warning: nodes.test resolves to 300 addresses; g uses the first 256") }
            #expect(warnings.count == 1, "\(warnings)")
        }
    }
}
