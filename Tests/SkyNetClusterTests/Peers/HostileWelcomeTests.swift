import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetLink
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import SkyNetTestSupport
import Testing

/// What a coordinator accepts from a node is checked, since a node reached over ssh needs no
/// token and may be anything a login runs: a welcome in another protocol version, or with no
/// slot (a dispatch-only scan waited on it for ever), and a result for another task.
@Suite(.timeLimit(.minutes(1)))
struct HostileWelcomeTests {
    /// A node on 127.0.0.1 that answers the hello with `welcome` and each scan request with
    /// `answer(requestID, taskID)`, raw.
    final class ScriptedNode: Sendable {
        let listener: Listener
        let connections = Locked<[Connection]>([])

        convenience init(welcome: Reply, answer: @escaping @Sendable (Int, UUID) -> Reply) async throws {
            try await self.init(welcomeLine: welcome.line, answer: answer)
        }

        /// The same answering the hello with `welcomeLine`, as it is.
        init(welcomeLine welcome: [UInt8], answer: @escaping @Sendable (Int, UUID) -> Reply) async throws {
            listener = try await Listener.bind(host: "127.0.0.1", port: 0)
            let connections = self.connections
            try listener.start { socket, peer in
                let connection = Connection(socket: socket, peer: peer)
                connections.withLock { $0.append(connection) }
                connection.start(onEvent: { event in
                    guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                    switch request {
                    case .hello: try? connection.send(welcome)
                    case .scan(let id, let task, _): try? connection.send(answer(id, task.id).line)
                    default: break
                    }
                })
            }
        }

        func stop() {
            listener.stop()
            for connection in connections.withLock({ $0 }) { connection.close() }
        }
    }

    @Test(arguments: [
        (Reply.welcome(version: 99, name: "n", capacity: 2, jobs: nil), "a welcome of protocol version 99 to a version 1 hello"),
        (Reply.welcome(version: 1, name: "n", capacity: 0, jobs: nil), "a welcome with capacity 0: a node has at least one slot"),
    ])
    func aWelcomeThatCannotBeUsedIsRefused(welcome: Reply, message: String) async throws {
        let node = try await ScriptedNode(welcome: welcome) { id, task in .result(id: id, task: task, result: "") }
        defer { node.stop() }
        await #expect(throws: WireError.badRequest(message)) {
            let peer = try await PeerConnection.open(name: "n", host: "127.0.0.1", port: node.listener.port, token: nil, timeout: .seconds(10))
            peer.close()
        }
    }

    /// A node that takes the hello and never answers it: the open ends with `TimeoutError` once
    /// the welcome's bound passes on the link's clock (and not before), its connection closed.
    @Test func aNodeThatNeverWelcomesTimesOutAtTheWelcomesBound() async throws {
        let node = try await ScriptedNode(welcomeLine: []) { id, task in .result(id: id, task: task, result: "") }
        defer { node.stop() }
        let clock = ManualClock(), start = clock.now
        let bound = start + .seconds(10) + TCPDialer.longestHold
        let open = Task {
            try await PeerConnection.open(name: "n", dialer: TCPDialer(host: "127.0.0.1", port: node.listener.port),
                                          token: nil, timeout: .seconds(10), clock: clock)
        }
        await clock.waitUntilPending(at: bound)
        clock.advance(by: bound - start - .milliseconds(1))
        try await awaitState { node.connections.withLock { $0.count } == 1 }
        #expect(node.connections.withLock { $0[0].closeReason } == nil)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: TimeoutError.self) { _ = try await open.value }
        #expect(clock.pendingDeadlines.isEmpty)
    }

    /// A welcome that is a protocol message with a field out of its range is the node's
    /// `bad-request`, not what a login's start-up files printed (`NotTheProtocol`).
    @Test(arguments: ["-1", "1.5", #""4""#, "1e300", "18446744073709551616"])
    func aMalformedWelcomeIsABadRequestNotABanner(capacity: String) async throws {
        let line = #"{"type":"welcome","version":1,"name":"n","capacity":\#(capacity)}"# + "\n"
        let node = try await ScriptedNode(welcomeLine: Array(line.utf8)) { id, task in .result(id: id, task: task, result: "") }
        defer { node.stop() }
        do {
            let peer = try await PeerConnection.open(name: "n", host: "127.0.0.1", port: node.listener.port, token: nil, timeout: .seconds(10))
            peer.close()
            Issue.record("a welcome with capacity \(capacity) was taken")
        } catch let error as WireError {
            #expect(error.code == .badRequest)
            #expect(error.message?.hasPrefix("a malformed welcome: \"capacity\"") == true, "\(error)")
        } catch {
            Issue.record("\(type(of: error)): \(error)")
        }
    }

    /// An idle bound too large for a `Duration` (`1e21` trapped the coordinator in
    /// `Duration.seconds`) is taken as the largest the coordinator keeps; the link is used.
    @Test(arguments: ["1e21", "1e39", "1e300", "1.7976931348623157e308"])
    func aHugeIdleBoundIsCappedNotATrap(idle: String) async throws {
        let line = #"{"type":"welcome","version":1,"name":"n","capacity":2,"idle":\#(idle)}"# + "\n"
        let node = try await ScriptedNode(welcomeLine: Array(line.utf8)) { id, task in .result(id: id, task: task, result: "ok") }
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "n", host: "127.0.0.1", port: node.listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        #expect(peer.welcome.idleSeconds == Reply.maxIdleSeconds)
        let remote = RemoteSystem(name: "n", peer: peer, timeout: .seconds(10))
        #expect(try await remote.run(ScanTask(input: 1, duration: 0)) == "ok")
    }

    /// A first line that is not a message of the protocol at all is still `NotTheProtocol`.
    @Test(arguments: ["Welcome to the lab", #"{"motd":"hello"}"#, "[1,2]"])
    func aFirstLineThatIsNoMessageIsNotTheProtocol(first: String) async throws {
        let node = try await ScriptedNode(welcomeLine: Array((first + "\n").utf8)) { id, task in .result(id: id, task: task, result: "") }
        defer { node.stop() }
        await #expect(throws: NotTheProtocol.self) {
            let peer = try await PeerConnection.open(name: "n", host: "127.0.0.1", port: node.listener.port, token: nil, timeout: .seconds(10))
            peer.close()
        }
    }

    @Test func aResultForAnotherTaskDoesNotCompleteThisOne() async throws {
        let stranger = UUID()
        let node = try await ScriptedNode(welcome: .welcome(version: 1, name: "n", capacity: 2, jobs: nil)) { id, _ in
            .result(id: id, task: stranger, result: "not yours")
        }
        defer { node.stop() }
        let peer = try await PeerConnection.open(name: "n", host: "127.0.0.1", port: node.listener.port, token: nil, timeout: .seconds(10))
        defer { peer.close() }
        let remote = RemoteSystem(name: "n", peer: peer, timeout: .seconds(10))
        let task = ScanTask(input: 3, duration: 0)
        await #expect(throws: ScanFailure(code: .badReply, message: "n answered task \(task.id) with the result of task \(stranger)")) {
            _ = try await remote.run(task)
        }
    }
}
