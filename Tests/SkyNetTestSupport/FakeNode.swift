import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork

/// A node written for the tests, on 127.0.0.1 and port 0: it welcomes with the jobs `scan` and
/// `slow`, holds every task it is sent without answering until told to, and answers pings
/// unless told not to. It records what it was sent.
package final class FakeNode: Sendable {
    /// A task the node was sent and has not answered.
    package struct Held: Sendable {
        let connection: Connection
        let id: Int
        let task: ScanTask
        package let isJob: Bool
    }

    private struct State {
        var connections: [Connection] = []
        var held: [Held] = []
        var received = 0
        var answersPings = true
        var pongs = 0
        var unansweredPings = 0
        var cancels: [Int] = []
    }

    package let port: Int
    private let listener: Listener
    private let state = Watched(State())

    private init(listener: Listener) {
        self.listener = listener
        self.port = listener.port
    }

    package static func start() async throws -> FakeNode {
        let node = FakeNode(listener: try await Listener.bind(host: "127.0.0.1", port: 0))
        try node.listener.start { socket, peer in
            let connection = Connection(socket: socket, peer: peer)
            node.state.update { $0.connections.append(connection) }
            connection.start(onEvent: { event in
                guard case .line(let line) = event, let request = try? Request.decode(line) else { return }
                node.handle(request, on: connection)
            })
        }
        return node
    }

    /// Stops listening and closes every connection.
    package func stop() {
        listener.stop()
        for connection in state.value.connections { connection.close() }
    }

    /// Whether pings get a pong from now on.
    package func answerPings(_ answer: Bool) {
        state.update { $0.answersPings = answer }
    }

    /// Answers every held task with the result `done <input>`; returns how many it answered.
    @discardableResult
    package func answerHeld() -> Int {
        let held = state.update { state in
            defer { state.held = [] }
            return state.held
        }
        for entry in held {
            try? entry.connection.send(Reply.result(id: entry.id, task: entry.task.id, result: "done \(entry.task.inputText)").line)
        }
        return held.count
    }

    package var held: [Held] { state.value.held }
    /// Tasks received in all (scans and jobs), answered or not.
    package var received: Int { state.value.received }
    package var pongs: Int { state.value.pongs }
    /// Pings received while told not to answer them.
    package var unansweredPings: Int { state.value.unansweredPings }
    package var cancels: [Int] { state.value.cancels }

    /// Returns once exactly `count` tasks are held unanswered; throws after `limit`.
    package func waitUntilHolding(_ count: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await state.wait(upTo: limit) { $0.held.count == count }
    }

    /// Returns once at least `count` tasks are held unanswered; throws after `limit`.
    package func waitUntilHolding(atLeast count: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await state.wait(upTo: limit) { $0.held.count >= count }
    }

    /// Returns once at least `count` tasks were received in all; throws after `limit`.
    package func waitUntilReceived(_ count: Int, upTo limit: Duration = .seconds(30)) async throws {
        try await state.wait(upTo: limit) { $0.received >= count }
    }

    private func handle(_ request: Request, on connection: Connection) {
        switch request {
        case .hello:
            let jobs = [JobRegistry.scan: "built-in simulated scan", "slow": "sleep 3600"]
            try? connection.send(Reply.welcome(version: 1, name: "beta", capacity: 4, jobs: jobs).line)
        case .scan(let id, let task, _), .job(let id, let task):
            let isJob = if case .job = request { true } else { false }
            state.update { state in
                state.held.append(Held(connection: connection, id: id, task: task, isJob: isJob))
                state.received += 1
            }
        case .ping(let id):
            let answer = state.update { state in
                if state.answersPings { state.pongs += 1 } else { state.unansweredPings += 1 }
                return state.answersPings
            }
            let pong = Pong(name: "beta", running: 0, capacity: 4, completed: 0, failed: 0)
            if answer { try? connection.send(Reply.pong(id: id, pong).line) }
        case .transfer(let transfer):
            // No files in its welcome: answered as a node that does not know the message.
            try? connection.send(WireError(code: .unknownType, message: "unknown type \"transfer\"", id: transfer.id).line)
        case .basefile(let basefile):
            try? connection.send(WireError(code: .unknownType, message: "unknown type \"basefile\"", id: basefile.id).line)
        case .call(let id, _):
            try? connection.send(WireError(code: .unknownType, message: "unknown type \"call\"", id: id).line)
        case .spawn(let id, _):
            try? connection.send(WireError(code: .unknownType, message: "unknown type \"spawn\"", id: id).line)
        case .answer:
            break
        case .lookup(let id, _, _):
            try? connection.send(WireError(code: .unknownType, message: "unknown type \"lookup\"", id: id).line)
        case .chunk, .fileEnd:
            break
        case .cancel(let id):
            state.update { state in
                state.cancels.append(id)
                state.held.removeAll { $0.id == id && $0.connection === connection }
            }
        }
    }
}
