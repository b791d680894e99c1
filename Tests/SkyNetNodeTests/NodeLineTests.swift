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
            try client.send(scan(1, input: 11, duration: 0.3, wait: 30))
            try await awaitState(upTo: .seconds(10)) { node.system.counters.running == 1 }
            try client.send(scan(2, input: 22, duration: 0, wait: 30))
            try await awaitState(upTo: .seconds(10)) { await node.system.waitingCount == 1 }
            try client.send(scan(3, input: 33, duration: 0, wait: 30))  // the line is full
            try client.send(scan(4, input: 44, duration: 0, wait: nil))  // may not wait
            let lines = try await read(4, from: client)
            #expect(lines.map { $0["id"] as? Int } == [3, 4, 1, 2])
            #expect(lines.map { $0["type"] as? String } == ["failure", "failure", "result", "result"])
            #expect(lines[0]["code"] as? String == "busy" && lines[1]["code"] as? String == "busy")
            #expect(lines[2]["result"] as? String == "11" && lines[3]["result"] as? String == "22")
            #expect(node.system.counters == SystemCounters(running: 0, completed: 2, failed: 0))
        }
    }

    @Test func aDrainAnswersTheWaitingScansBusyAndFinishesTheRunningOne() async throws {
        try await nodeTests.withNode(capacity: 1) { node in
            let (client, _) = try await greeted(node)
            defer { client.close() }
            try client.send(scan(1, input: 11, duration: 0.5, wait: 30))
            try await awaitState(upTo: .seconds(10)) { node.system.counters.running == 1 }
            try client.send(scan(2, input: 22, duration: 0, wait: 30))
            try await awaitState(upTo: .seconds(10)) { await node.system.waitingCount == 1 }
            let drain = Task { await node.drain(within: .seconds(30)) }
            let lines = try await read(3, from: client)
            await drain.value
            #expect(lines.map { $0["type"] as? String } == ["draining", "failure", "result"])
            #expect(lines[1]["id"] as? Int == 2 && lines[1]["code"] as? String == "busy")
            #expect(lines[1]["message"] as? String == "beta is draining")
            #expect(lines[2]["id"] as? Int == 1 && lines[2]["result"] as? String == "11")
        }
    }
}
