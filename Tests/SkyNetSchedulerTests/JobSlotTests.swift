import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// `{%}`: each task running on a system holds a job slot of its own, 1...capacity, the lowest
/// free one, given back when its work ends (GNU parallel's job slot).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct JobSlotTests {
    @Test func slotsAreTakenLowestFirstAndAFreedOneIsReused() {
        var slots = JobSlots(capacity: 4)
        #expect((0..<4).map { _ in slots.take() } == [1, 2, 3, 4])
        #expect(slots.take() == nil)
        slots.giveBack(3)
        slots.giveBack(1)
        slots.giveBack(4)
        #expect(slots.take() == 1)
        slots.giveBack(2)
        #expect((0..<4).map { _ in slots.take() } == [2, 3, 4, nil])
        var none = JobSlots(capacity: 0)
        #expect(none.take() == nil)
    }

    @Test func slotsStayDistinctOverManyTakesAndReturns() {
        var slots = JobSlots(capacity: 64)
        var held: Set<Int> = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            if !held.isEmpty, held.count == 64 || Bool.random(using: &generator) {
                let slot = held.randomElement(using: &generator) ?? 0
                held.remove(slot)
                slots.giveBack(slot)
            } else {
                let lowestFree = (1...64).first { !held.contains($0) }
                let slot = slots.take()
                #expect(slot == lowestFree)
                if let slot { held.insert(slot) }
            }
        }
    }

    /// The coordinator's own system: closure jobs that report their slot and wait to be let go.
    @Test func aLocalSystemGivesRunningTasksDistinctSlotsAndReusesAFreedOne() async throws {
        let started = Watched<[String: Int]>([:])
        let released = Watched<Set<String>>([])
        var jobs = JobRegistry(api: UnreliableAPI(failingEvery: 0))
        try jobs.register("hold") { request in
            started.update { $0[request.input] = request.slot }
            try await released.wait(upTo: .seconds(60)) { $0.contains(request.input) }
            return String(request.slot)
        }
        let system = LocalSystem(capacity: 3, jobs: jobs)
        let run = { (input: String) in Task { try await system.run(ScanTask(input: 0, job: "hold", text: input)) } }
        let first = ["a", "b", "c"].map(run)
        defer { released.update { $0.formUnion(["a", "b", "c", "d"]) } }
        try await started.wait(upTo: .seconds(30)) { $0.count == 3 }
        #expect(Set(started.value.values) == [1, 2, 3])
        await #expect(throws: ScanFailure.self) { try await system.run(ScanTask(input: 0, job: "hold", text: "busy")) }
        let freed = try #require(started.value["b"])
        released.update { _ = $0.insert("b") }
        #expect(try await first[1].value == String(freed))
        let again = run("d")
        try await started.wait(upTo: .seconds(30)) { $0.count == 4 }
        #expect(started.value["d"] == freed)
        released.update { $0.formUnion(["a", "c", "d"]) }
        for task in [first[0], first[2], again] { _ = try await task.value }
        #expect(system.counters.running == 0)
    }

    /// A node of capacity 3 running a command that writes `{%}` to a file, then hangs until
    /// told to go on: three at once hold 1, 2 and 3, and the next task takes the freed slot.
    @Test func aNodeGivesHangingCommandsDistinctSlotsAndReusesAFreedOne() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-slots-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = "\(folder)/hold.sh"
        try """
            printf '%s' "$1" > "$2.tmp" && mv "$2.tmp" "$2.slot"
            while [ ! -e "$2.go" ]; do sleep 0.02; done
            echo "slot $1"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let nodeTests = NodeHarness()
        var options = nodeTests.options(capacity: 3)
        try options.jobs.register("hold", CommandJob(name: "hold", command: CommandTemplate("/bin/sh '\(script)' {%} {}")))
        let task = { @Sendable (name: String) in "\(folder)/\(name)" }
        let slot = { @Sendable (name: String) in try? String(contentsOfFile: task(name) + ".slot", encoding: .utf8) }
        let go = { @Sendable (name: String) in _ = FileManager.default.createFile(atPath: task(name) + ".go", contents: nil) }
        defer { for name in ["a", "b", "c", "d"] { go(name) } }
        try await nodeTests.withNode(options) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            let run = { (name: String) in
                Task {
                    let id = peer.nextID()
                    return try await peer.request(id: id, .run(id: id, task: ScanTask(input: 0, job: "hold", text: task(name))))
                }
            }
            let first = ["a", "b", "c"].map(run)
            try await awaitState { ["a", "b", "c"].allSatisfy { slot($0) != nil } }
            #expect(Set(["a", "b", "c"].compactMap(slot)) == ["1", "2", "3"])
            let freed = try #require(slot("b"))
            go("b")
            guard case .result(_, _, let result) = try await first[1].value else { Issue.record("b did not succeed"); return }
            #expect(result == "slot \(freed)")
            let again = run("d")
            try await awaitState { slot("d") != nil }
            #expect(slot("d") == freed)
            for name in ["a", "c", "d"] { go(name) }
            for (name, reply) in zip(["a", "c", "d"], [first[0], first[2], again]) {
                guard case .result(_, _, let result) = try await reply.value else { Issue.record("\(name) did not succeed"); continue }
                #expect(result == "slot \(slot(name) ?? "?")")
            }
        }
    }
}
