import Foundation
import Testing
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// Lines sent on the loop that reads the connection (by a handler, or by a task that prefers
/// the loop) wait for the end of its turn and leave together: they still all leave, in order,
/// and a line sent just before a close leaves before the end.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionLoopSendTests {
    @Test func linesSentOnTheLoopLeaveInOrderAndBeforeAClose() async throws {
        let (server, client) = try await loopbackPair()
        let peer = client.descriptor
        defer { client.close() }
        let connection = Connection(stream: server, peer: "loop-send")
        defer { connection.close() }
        connection.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            switch String(decoding: line, as: UTF8.self) {
            case "handler":
                for reply in ["h1", "h2", "h3"] { try? connection.send(Array("\(reply)\n".utf8)) }
            case "task":
                // Runs on the loop after this handler, as a node's scans do.
                Task(executorPreference: connection.eventLoop) {
                    for reply in ["t1", "t2"] { try? connection.send(Array("\(reply)\n".utf8)) }
                    await Task.yield()
                    try? connection.send(Array("t3\n".utf8))
                }
            default:
                try? connection.send(Array("bye\n".utf8))
                connection.close()
            }
        })
        #expect(write(peer, "handler\ntask\n", 13) == 13)
        let first = try await onOwnThread(named: "test-loop-send") { readText(from: peer, until: "t3\n") }
        #expect(first == "h1\nh2\nh3\nt1\nt2\nt3\n")
        #expect(write(peer, "close\n", 6) == 6)
        let last = try await onOwnThread(named: "test-loop-send") { readText(from: peer) }
        #expect(last == "bye\n")
    }
}
