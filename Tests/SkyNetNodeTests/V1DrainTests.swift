import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// An older coordinator (protocol v1, no token, replies matched by id) and a draining node:
/// the `draining` line carries no id, so it answers nothing such a client waits for, and new
/// work is refused with `busy` exactly as a node without drain refuses it while it stops.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct V1DrainTests {
    let nodeTests = NodeHarness()

    @Test func anOldClientSeesAnIDLessDrainingLineAndBusy() async throws {
        let gate = try DrainGate.make(1)
        defer { gate.remove() }
        var options = nodeTests.options(capacity: 2)
        try DrainGate.register(in: &options.jobs)
        let path = gate.paths[0]
        try await nodeTests.withNode(options) { node in
            let client = try await onOwnThread(named: "test-v1") { () throws -> RawLines in
                var client = try RawLines(port: node.port)
                try client.send(#"{"type":"hello","version":1,"name":"old"}"#)
                guard client.readLine()?.contains(#""welcome""#) == true else { throw DrainGate.Failure(description: "no welcome") }
                try client.send(#"{"type":"job","id":1,"job":"hold","task":{"id":"\#(UUID().uuidString)","sector":0,"input":"\#(path)"}}"#)
                return client
            }
            defer { client.close() }
            try await awaitState(upTo: .seconds(10)) { node.system.counters.running == 1 }
            let drain = Task { await node.drain(within: .seconds(60)) }
            let (lines, reader) = try await onOwnThread(named: "test-v1") { () throws -> ([String], RawLines) in
                var client = client
                var lines: [String] = []
                // The first line the drain sends, unasked.
                lines.append(client.readLine() ?? "nothing")
                try client.send(#"{"type":"scan","id":2,"task":{"id":"\#(UUID().uuidString)","input":5,"duration":0}}"#)
                lines.append(client.readLine() ?? "nothing")
                return (lines, client)
            }
            let draining = try #require(jsonFields(lines[0]), "\(lines[0])")
            #expect(draining["type"] as? String == "draining")
            #expect(draining["id"] == nil)
            #expect((draining["timeout"] as? NSNumber)?.doubleValue == 60)
            let busy = try #require(jsonFields(lines[1]), "\(lines[1])")
            #expect(busy["type"] as? String == "failure")
            #expect(busy["id"] as? Int == 2)
            #expect(busy["code"] as? String == "busy")
            #expect(busy["message"] as? String == "beta is draining")

            // The running task still completes for the old client.
            try await gate.release(0)
            let result = try await onOwnThread(named: "test-v1") { () throws -> String in
                var client = reader
                return client.readLine() ?? "nothing"
            }
            let fields = try #require(jsonFields(result), "\(result)")
            #expect(fields["type"] as? String == "result")
            #expect(fields["id"] as? Int == 1)
            #expect(fields["result"] as? String == "released 0")
            try await withTimeout(.seconds(10)) { await drain.value }
        }
    }
}
