import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A node runs the jobs it registered, says which in its welcome, and still serves v1 clients.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeJobTests {
    let nodeTests = NodeHarness()

    func options() throws -> Node.Options {
        var options = nodeTests.options()
        try options.jobs.register("upper", summary: "uppercase the input") { request in
            "\(request.sector):\(request.input.uppercased())"
        }
        return options
    }

    func job(_ peer: PeerConnection, _ name: String, sector: Int, input: String, timeout: Double? = nil) async throws -> Reply {
        let id = peer.nextID()
        let task = ScanTask(input: sector, duration: 0, job: name, text: input, timeout: timeout)
        return try await peer.request(id: id, .run(id: id, task: task))
    }

    @Test func theWelcomeListsTheJobsWithTheirSummaries() async throws {
        try await nodeTests.withNode(try options()) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            #expect(peer.welcome.jobs == ["scan": "built-in simulated scan", "upper": "uppercase the input"])
        }
    }

    @Test func aJobRequestRunsTheRegisteredJob() async throws {
        try await nodeTests.withNode(try options()) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            let reply = try await job(peer, "upper", sector: 4, input: "héllo wörld")
            guard case .result(_, _, let result) = reply else { Issue.record("expected a result, got \(reply)"); return }
            #expect(result == "4:HÉLLO WÖRLD")
        }
    }

    /// 300,000 control characters escape to 1.8 MB: the node answers with a failure that says
    /// so, and the link (which would refuse a line over 1 MiB) stays up.
    @Test func aResultTooLargeOnceEncodedFailsAndKeepsTheLink() async throws {
        var options = try options()
        try options.jobs.register("controls") { _ in String(repeating: "\u{1}", count: 300_000) }
        try await nodeTests.withNode(options) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            let reply = try await job(peer, "controls", sector: 1, input: "")
            guard case .failure(_, _, let code, let message) = reply else { Issue.record("expected a failure, got \(reply)"); return }
            #expect(code == "task-failed")
            #expect(message.hasSuffix("bytes once encoded, over the 1048576 of a wire line"))
            guard case .result(_, _, let result) = try await job(peer, "upper", sector: 2, input: "x") else {
                Issue.record("the link did not survive"); return
            }
            #expect(result == "2:X")
        }
    }

    @Test func aJobTheNodeLacksFailsWithUnknownJob() async throws {
        try await nodeTests.withNode(try options()) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            let reply = try await job(peer, "sum", sector: 0, input: "a.txt")
            guard case .failure(_, _, let code, let message) = reply else { Issue.record("expected a failure, got \(reply)"); return }
            #expect(code == "unknown-job")
            #expect(message == "beta has no job 'sum'")
        }
    }

    @Test func aJobPastItsDeadlineFailsWithDeadlineAndFreesItsSlot() async throws {
        var options = nodeTests.options(capacity: 1)
        try options.jobs.register("hang") { _ in
            try await Task.sleep(for: .seconds(60))
            return "too late"
        }
        try await nodeTests.withNode(options) { node in
            let peer = try await nodeTests.connect(node)
            defer { peer.close() }
            let reply = try await job(peer, "hang", sector: 0, input: "x", timeout: 0.3)
            guard case .failure(_, _, let code, let message) = reply else { Issue.record("expected a failure, got \(reply)"); return }
            #expect(code == "deadline")
            #expect(message == "stopped at its deadline of 0.3 s")
            #expect(try await nodeTests.running(peer) == 0)
        }
    }

    @Test func aV1ClientStillScansAndIsToldTheJobs() async throws {
        try await nodeTests.withNode(try options()) { node in
            let socket = try await onOwnThread(named: "test-raw") { () throws -> Socket in
                let socket = try Socket.connect(host: "127.0.0.1", port: node.port, timeout: .seconds(5))
                let lines = [
                    #"{"type":"hello","version":1,"name":"old"}"#,
                    #"{"type":"scan","id":1,"task":{"id":"6f1c1a52-0000-4000-8000-000000000001","input":42,"duration":0}}"#,
                ]
                _ = try socket.send(Array(lines.map { $0 + "\n" }.joined().utf8), wait: true)
                return socket
            }
            defer { socket.close() }
            let lines = try await onOwnThread(named: "test-read") { receiveLines(from: socket, count: 2, silence: .seconds(10)) }
            #expect(lines.count == 2)
            #expect(lines.first?.contains(#""jobs":{"scan":"built-in simulated scan","upper":"uppercase the input"}"#) == true)
            #expect(lines.last == #"{"type":"result","id":1,"task":"6f1c1a52-0000-4000-8000-000000000001","result":"42"}"#)
        }
    }
}
