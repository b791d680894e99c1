import Foundation
@testable import SkyNet
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

/// A node's line of scans that may wait (`"wait"`): its welcome says how long it is, waiting
/// scans start in the order they came as slots free, a full line and a scan that may not wait
/// are `busy`, and a drain answers the waiting ones `busy` so that they run elsewhere.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeLineTests {
    let nodeTests = NodeHarness()

    func scan(_ id: Int, input: Int, duration: Double, wait: Double?) -> String {
        let task = #"{"id":"\#(UUID().uuidString.lowercased())","input":\#(input),"duration":\#(duration)}"#
        return #"{"type":"scan","id":\#(id),"task":\#(task)"# + (wait.map { #","wait":\#($0)}"# } ?? "}")
    }

    /// Connects, says hello and returns the client with the welcome's fields.
    func greeted(_ node: Node) async throws -> (RawLines, [String: Any]) {
        let (client, welcome) = try await onOwnThread(named: "test-line") { () throws -> (RawLines, String) in
            var client = try RawLines(port: node.port)
            try client.send(#"{"type":"hello","version":1,"name":"lines"}"#)
            return (client, client.readLine() ?? "")
        }
        return (client, jsonFields(welcome) ?? [:])
    }

    /// Sends `lines` in order, from a thread of its own (a socket's send may block).
    func send(_ lines: String..., on client: RawLines) async throws {
        try await onOwnThread(named: "test-line") { () throws in
            for line in lines { try client.send(line) }
        }
    }

    func read(_ count: Int, from client: RawLines) async throws -> [[String: Any]] {
        let lines = try await onOwnThread(named: "test-line") { () throws -> [String] in
            var client = client
            return (0..<count).map { _ in client.readLine() ?? #"{"type":"nothing"}"# }
        }
        return lines.map { jsonFields($0) ?? [:] }
    }

    @Test func waitingScansStartInOrderAsSlotsFreeAndAFullLineIsBusy() async throws {
        try await nodeTests.withNode(capacity: 1) { node in
            let (client, welcome) = try await greeted(node)
            defer { client.close() }
            #expect(welcome["capacity"] as? Int == 1)
            #expect(welcome["queue"] as? Int == 1)
            // The first holds the slot until it is cancelled, whenever this test gets the CPU.
            try await send(scan(1, input: 11, duration: 600, wait: 30), on: client)
            try await awaitState(upTo: .seconds(30)) { node.system.counters.running == 1 }
            try await send(scan(2, input: 22, duration: 0, wait: 30), on: client)
            try await awaitState(upTo: .seconds(30)) { await node.system.waitingCount == 1 }
            try await send(scan(3, input: 33, duration: 0, wait: 30),  // the line is full
                           scan(4, input: 44, duration: 0, wait: nil),  // may not wait
                           on: client)
            let busy = try await read(2, from: client)
            #expect(busy.map { $0["id"] as? Int } == [3, 4])
            #expect(busy.allSatisfy { $0["type"] as? String == "failure" && $0["code"] as? String == "busy" })
            #expect(node.system.counters.running == 1)
            try await send(#"{"type":"cancel","id":1}"#, on: client)
            let lines = try await read(2, from: client)
            #expect(lines.map { $0["id"] as? Int } == [1, 2])
            #expect(lines[0]["code"] as? String == "cancelled")
            #expect(lines[1]["type"] as? String == "result" && lines[1]["result"] as? String == "22")
            #expect(node.system.counters == SystemCounters(running: 0, completed: 1, failed: 1))
        }
    }

    @Test func aDrainAnswersTheWaitingScansBusyAfterItsDrainingLine() async throws {
        try await nodeTests.withNode(capacity: 1) { node in
            let (client, _) = try await greeted(node)
            defer { client.close() }
            try await send(scan(1, input: 11, duration: 600, wait: 30), on: client)
            try await awaitState(upTo: .seconds(30)) { node.system.counters.running == 1 }
            try await send(scan(2, input: 22, duration: 0, wait: 30), on: client)
            try await awaitState(upTo: .seconds(30)) { await node.system.waitingCount == 1 }
            // No time to finish: the running scan is cancelled at once, the waiting one refused.
            let drain = Task { await node.drain(within: .zero) }
            let lines = try await read(3, from: client)
            await drain.value
            #expect(lines[0]["type"] as? String == "draining")
            let answers = Dictionary(uniqueKeysWithValues: lines.dropFirst().map { ($0["id"] as? Int ?? 0, $0) })
            #expect(answers[2]?["code"] as? String == "busy")
            #expect(answers[2]?["message"] as? String == "beta is draining")
            #expect(answers[1]?["code"] as? String == "cancelled")
        }
    }
}
