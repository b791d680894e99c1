import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWork
import Testing

/// `Node.serve`: a node without a listener serves the one client at the other end of two pipes,
/// as `skynet node --stdio` serves its coordinator over stdin and stdout. Spoken to in raw
/// protocol lines (docs/PROTOCOL.md), so what the wire carries is what is checked.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeStdioTests {
    /// What the client's end received.
    struct Received {
        var lines: [String] = []
        var closed: Connection.CloseReason?
    }

    /// A node serving one end of two pipes, and the client's connection on the other (started,
    /// its lines kept). `body` runs with both; the client is closed and the node stopped on
    /// every path.
    func withPipedNode<T>(_ options: Node.Options, log: @escaping @Sendable (String) -> Void = { _ in },
                          _ body: (Node, Connection, Watched<Received>) async throws -> T) async throws -> T {
        let toNode = try ChildProcess.makePipe(), fromNode = try ChildProcess.makePipe()
        let nodeSide = Connection(stream: try DescriptorPair(reading: toNode.read, writing: fromNode.write), peer: "stdio")
        let client = Connection(stream: try DescriptorPair(reading: fromNode.read, writing: toNode.write), peer: "node")
        let received = Watched(Received())
        client.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            received.update { $0.lines.append(String(decoding: line, as: UTF8.self)) }
        }, onClose: { why in received.update { $0.closed = why } })
        let node = Node.serve(nodeSide, options: options, log: log)
        do {
            let result = try await body(node, client, received)
            client.close()
            await node.stop(grace: .seconds(1))
            return result
        } catch {
            client.close()
            await node.stop(grace: .seconds(1))
            throw error
        }
    }

    /// Where the `hang` job is.
    struct HangState {
        var started = false
        var ended = false
    }

    /// Options with a token, which a node over stdio must ignore, and two jobs.
    func options(capacity: Int, hang: Watched<HangState>) throws -> Node.Options {
        var options = Node.Options(name: "gpu1")
        options.capacity = capacity
        options.failingEvery = 0
        options.token = String(repeating: "t", count: 32)
        options.logsConnections = false
        try options.jobs.register("upper", summary: "uppercase the input") { request in request.input.uppercased() }
        try options.jobs.register("hang") { _ in
            hang.update { $0.started = true }
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                hang.update { $0.ended = true }
                throw error
            }
            return "too late"
        }
        return options
    }

    func send(_ client: Connection, _ line: String) throws {
        try client.send(Array((line + "\n").utf8))
    }

    /// The fields of the `index`-th line received, once it has come.
    func line(_ index: Int, of received: Watched<Received>) async throws -> [String: Any] {
        try await received.wait { $0.lines.count > index }
        let line = received.value.lines[index]
        guard let fields = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            Issue.record("not a JSON object: \(line)")
            return [:]
        }
        return fields
    }

    @Test func aPipedNodeWelcomesWithoutATokenAndServesPingsAndJobs() async throws {
        let cores = CoreCount.online()
        try await withPipedNode(try options(capacity: cores, hang: Watched(HangState()))) { node, client, received in
            #expect(node.host == "stdio" && node.port == 0)
            try send(client, #"{"type":"hello","version":1,"name":"coordinator"}"#)
            let welcome = try await line(0, of: received)
            // No challenge although the options hold a token: the login is the authority.
            #expect(welcome["type"] as? String == "welcome")
            #expect(welcome["name"] as? String == "gpu1")
            #expect(welcome["capacity"] as? Int == cores)
            #expect((welcome["jobs"] as? [String: String])?["upper"] == "uppercase the input")

            try send(client, #"{"type":"ping","id":1}"#)
            let pong = try await line(1, of: received)
            #expect(pong["type"] as? String == "pong" && pong["id"] as? Int == 1)
            #expect(pong["capacity"] as? Int == cores && pong["running"] as? Int == 0)

            let task = UUID().uuidString
            try send(client, #"{"type":"job","id":2,"job":"upper","task":{"id":"\#(task)","sector":0,"input":"héllo"}}"#)
            let result = try await line(2, of: received)
            #expect(result["type"] as? String == "result" && result["id"] as? Int == 2)
            #expect((result["task"] as? String)?.lowercased() == task.lowercased())
            #expect(result["result"] as? String == "HÉLLO")
        }
    }

    /// The ssh channel guarantees the bytes' integrity: a client that asks for files version 2
    /// gets it here (no digests), as over an encrypted link; one that does not keeps 1.
    @Test func aPipedNodeGrantsFilesVersion2ToAClientThatAsks() async throws {
        for (asked, granted) in [(nil, 1), (2, 2), (9, 2)] as [(Int?, Int)] {
            try await withPipedNode(try options(capacity: 1, hang: Watched(HangState()))) { _, client, received in
                try send(client, #"{"type":"hello","version":1,"name":"coordinator"\#(asked.map { ",\"files\":\($0)" } ?? "")}"#)
                let welcome = try await line(0, of: received)
                #expect((welcome["files"] as? [String: Any])?["version"] as? Int == granted, "asked \(String(describing: asked))")
            }
        }
    }

    /// After files version 2 the link is frames in clear: a frame refused (here an empty one)
    /// ends it and is logged, though a node over stdio logs no connections otherwise.
    @Test func aRefusedFrameOverStdioIsLogged() async throws {
        let log = LogLines()
        var options = try options(capacity: 1, hang: Watched(HangState()))
        options.logsConnections = false
        try await withPipedNode(options, log: { log.append($0) }) { _, client, received in
            try send(client, #"{"type":"hello","version":1,"name":"coordinator","files":2}"#)
            _ = try await line(0, of: received)
            try client.send([0, 0, 0, 0])  // raw: the client connection here is not framed
            try await received.wait { $0.closed != nil }
            try await log.waitFor("(an empty frame)")
        }
    }

    /// The end of the client's output (stdin at EOF for `--stdio`) ends the session: its running
    /// job is cancelled and the node's connection closes, which is what tells the CLI to exit.
    @Test func theEndOfItsInputCancelsTheRunningJobAndClosesTheConnection() async throws {
        let hang = Watched(HangState())
        try await withPipedNode(try options(capacity: 2, hang: hang)) { node, client, received in
            try send(client, #"{"type":"hello","version":1,"name":"coordinator"}"#)
            _ = try await line(0, of: received)
            try send(client, #"{"type":"job","id":1,"job":"hang","task":{"id":"\#(UUID().uuidString)","sector":0,"input":"x"}}"#)
            try await hang.wait(upTo: .seconds(5)) { $0.started }
            try send(client, #"{"type":"ping","id":2}"#)
            let pong = try await line(1, of: received)
            #expect(pong["running"] as? Int == 1)
            #expect(node.connectionCount == 1)

            client.close()
            try await hang.wait(upTo: .seconds(5)) { $0.ended }
            try await awaitState(upTo: .seconds(5)) { node.connectionCount == 0 }
        }
    }

    /// Scans sent just before the end of the node's input (`printf … | skynet node --stdio`) are
    /// answered before the node ends: a scan of the built-in job runs on the loop that read its
    /// line, and the end read in the same turn waits for it.
    @Test func scansSentJustBeforeTheEndOfItsInputAreAnswered() async throws {
        let toNode = try ChildProcess.makePipe(), fromNode = try ChildProcess.makePipe()
        defer { close(fromNode.read) }
        let nodeSide = Connection(stream: try DescriptorPair(reading: toNode.read, writing: fromNode.write), peer: "stdio")
        let node = Node.serve(nodeSide, options: try options(capacity: 8, hang: Watched(HangState())))
        var input = #"{"type":"hello","version":1,"name":"coordinator"}"# + "\n"
        for id in 1...3 {
            input += #"{"type":"scan","id":\#(id),"task":{"id":"\#(UUID().uuidString)","input":\#(id),"duration":0}}"# + "\n"
        }
        let bytes = Array(input.utf8)
        #expect(write(toNode.write, bytes, bytes.count) == bytes.count)
        close(toNode.write)
        // The node closes its output at its end: read to there.
        let output = try await onOwnThread(named: "test-stdio-end") { readText(from: fromNode.read) }
        await node.stop(grace: .seconds(1))
        let results = output.split(separator: "\n").compactMap { line -> Int? in
            guard let fields = jsonFields(String(line)), fields["type"] as? String == "result" else { return nil }
            return fields["id"] as? Int
        }
        #expect(results.sorted() == [1, 2, 3], "\(output)")
    }

    /// Over stdio the node's log goes to the coordinator's terminal: with `--verbose`, what a
    /// job said (its error, its stderr) is logged with control characters escaped, so a job
    /// cannot write escape sequences to that terminal.
    @Test func aVerboseLogEscapesWhatAJobSaid() async throws {
        struct Loud: Error, CustomStringConvertible { var description: String { "\u{1b}[31mRED\u{1b}]0;title\u{7}" } }
        var options = Node.Options(name: "gpu1")
        options.failingEvery = 0
        options.verbose = true
        options.logsConnections = false
        try options.jobs.register("loud") { _ in throw Loud() }
        let logged = Watched<[String]>([])
        let toNode = try ChildProcess.makePipe(), fromNode = try ChildProcess.makePipe()
        let nodeSide = Connection(stream: try DescriptorPair(reading: toNode.read, writing: fromNode.write), peer: "stdio")
        let client = Connection(stream: try DescriptorPair(reading: fromNode.read, writing: toNode.write), peer: "node")
        client.start(onEvent: { _ in })
        let node = Node.serve(nodeSide, options: options) { line in logged.update { $0.append(line) } }
        defer { client.close() }
        try send(client, #"{"type":"hello","version":1,"name":"coordinator"}"#)
        try send(client, #"{"type":"job","id":1,"job":"loud","task":{"id":"\#(UUID().uuidString)","sector":0,"input":"x"}}"#)
        var taskLine: String?
        do {
            try await logged.wait { $0.contains { $0.hasPrefix("[Node] Task") } }
            taskLine = logged.value.first { $0.hasPrefix("[Node] Task") }
        } catch {
            await node.stop(grace: .seconds(1))
            throw error
        }
        client.close()
        await node.stop(grace: .seconds(1))
        let line = try #require(taskLine)
        #expect(line.contains("RED"), "\(line)")
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f }, "\(line.debugDescription)")
    }
}
