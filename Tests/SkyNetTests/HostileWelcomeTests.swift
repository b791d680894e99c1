import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire

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

        init(welcome: Reply, answer: @escaping @Sendable (Int, UUID) -> Reply) async throws {
            listener = try await Listener.bind(host: "127.0.0.1", port: 0)
            let connections = self.connections
            listener.start { socket, peer in
                let connection = Connection(socket: socket, peer: peer)
                connections.withLock { $0.append(connection) }
                connection.start(onEvent: { event in
                    guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                    switch request {
                    case .hello: try? connection.send(welcome.line)
                    case .scan(let id, let task): try? connection.send(answer(id, task.id).line)
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
