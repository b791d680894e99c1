import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWire
import Testing

/// Half-open and silent peers, descriptors and the hello budget, in process.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeLivenessTests {
    let nodeTests = NodeHarness()

    /// A raw client: connects, sends `lines`, and returns its socket (the test closes it).
    func rawClient(_ node: Node, saying lines: [String]) async throws -> Socket {
        let (socket, _) = try await onOwnThread(named: "test-raw") { () throws -> (Socket, Int) in
            let socket = try Socket.connect(host: "127.0.0.1", port: node.port, timeout: .seconds(5))
            let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
            return (socket, try socket.send(bytes, wait: true))
        }
        return socket
    }

    /// Lets the sweeps numbered `turns` run on `clock`, one every 150 ms from `start` (a quarter
    /// of a 600 ms bound), each once the sweeper waits for it.
    func sweeps(_ turns: ClosedRange<Int>, on clock: ManualClock, from start: ContinuousClock.Instant) async {
        for sweep in turns {
            await clock.waitUntilPending(at: start + .milliseconds(150 * sweep))
            clock.advance(by: .milliseconds(150))
        }
    }

    /// Reads until the node closes the connection (or `limit`); returns the lines and when.
    func readToEnd(_ socket: Socket, limit: Duration) async throws -> [String] {
        try await onOwnThread(named: "test-read") { receiveLines(from: socket, count: .max, silence: limit) }
    }

    /// Nodes of one process that keep time on one clock share one sweeper: one timer for all
    /// (a host of thousands of nodes wakes once a tick), each node still swept, and no timer
    /// left once they stop.
    @Test func theNodesOfAProcessShareOneSweeperAndEachIsStillSwept() async throws {
        var options = nodeTests.options()
        options.helloTimeout = .milliseconds(600)
        let clock = ManualClock(), start = clock.now
        var nodes: [Node] = []
        do {
            for _ in 0..<20 { nodes.append(try await Node.start(options, clock: clock)) }
            await clock.waitUntilPending(at: start + .milliseconds(150))
            for _ in 0..<100 { await Task.yield() }  // a sweeper per node would have its timer by now
            #expect(clock.pendingDeadlines == [start + .milliseconds(150)])
            let swept = nodes[13]
            let mute = try await rawClient(swept, saying: [])
            defer { mute.close() }
            try await awaitState(upTo: .seconds(60)) { swept.connectionCount == 1 }
            await sweeps(1...4, on: clock, from: start)
            #expect(try await readToEnd(mute, limit: .seconds(60)).isEmpty)
            try await awaitState(upTo: .seconds(60)) { swept.connectionCount == 0 }
        } catch {
            for node in nodes { await node.stop(grace: .seconds(1)) }
            throw error
        }
        for node in nodes { await node.stop(grace: .seconds(1)) }
        try await awaitState(upTo: .seconds(60)) { clock.pendingDeadlines.isEmpty }
    }

    /// On a manual clock: the sweeper (every 150 ms, a quarter of the bound) keeps the client
    /// at 150, 300 and 450 ms of silence and drops it at the sweep that finds 600 ms.
    @Test func aClientThatSaysHelloThenGoesSilentIsDroppedWithinTheIdleBound() async throws {
        var options = nodeTests.options()
        options.idleTimeout = .milliseconds(600)
        let clock = ManualClock(), start = clock.now
        let node = try await Node.start(options, clock: clock)
        do {
            let socket = try await rawClient(node, saying: [#"{"type":"hello","version":1,"name":"mute"}"#])
            defer { socket.close() }
            let welcome = try await onOwnThread(named: "test-read") { receiveLines(from: socket, count: 1, silence: .seconds(60)) }
            #expect(welcome.count == 1 && welcome[0].contains("welcome"))
            await sweeps(1...3, on: clock, from: start)
            // The sweep at 450 ms has run (the sweeper rests until 600 ms): the client is kept.
            await clock.waitUntilPending(at: start + .milliseconds(600))
            #expect(node.connectionCount == 1, "dropped too early, before 600 ms of silence")
            clock.advance(by: .milliseconds(150))
            #expect(try await readToEnd(socket, limit: .seconds(60)).isEmpty)
            try await awaitState(upTo: .seconds(5)) { node.connectionCount == 0 }
        } catch {
            await node.stop(grace: .seconds(1))
            throw error
        }
        await node.stop(grace: .seconds(1))
    }

    @Test func aCoordinatorWhoseLinkIsIdleKeepsItAliveWithPings() async throws {
        var options = nodeTests.options()
        options.idleTimeout = .milliseconds(4500)
        try await nodeTests.withNode(options) { node in
            let peer = try await nodeTests.connect(node, keepAlive: .milliseconds(450))
            defer { peer.close() }
            // The link stays up for two idle bounds with nothing but the keep-alive pings on it
            // (a bound ten pings long: a sanitizer build on a busy machine once missed 600 ms,
            // and at a load average of 25 a bound of 1.5 s).
            let closed = peer.closed
            await #expect(throws: TimeoutError.self) { _ = try await withTimeout(.seconds(9)) { await closed.value } }
            #expect(try await nodeTests.running(peer) == 0)
        }
    }

    /// The node names its idle bound in the welcome, and a coordinator with the default
    /// keep-alive (15 s) pings at a third of it: a short `--idle-timeout` never drops it.
    @Test func aNodeWithAShortIdleBoundSaysSoAndIsPingedInTime() async throws {
        var options = nodeTests.options()
        // Short beside the default keep-alive of 15 s; a ping every 1.5 s leaves 3 s for a
        // late one (at a load average of 25, 1 s was not enough under the thread sanitizer).
        options.idleTimeout = .milliseconds(4500)
        try await nodeTests.withNode(options) { node in
            let peer = try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: nil, timeout: .seconds(5))
            defer { peer.close() }
            #expect(peer.welcome.idleSeconds == 4.5)
            let closed = peer.closed
            await #expect(throws: TimeoutError.self) { _ = try await withTimeout(.seconds(9)) { await closed.value } }
            #expect(try await nodeTests.running(peer) == 0)
        }
    }

    @Test func anAcceptedAndAConnectedSocketBothProbeWithKeepalive() async throws {
        let (server, client) = try await loopbackPair()
        defer { server.close(); client.close() }
        #expect(server.keepsAlive && client.keepsAlive)
        #expect(server.keepAliveIdleSeconds == Socket.keepAlive.idle)
        #expect(client.keepAliveIdleSeconds == Socket.keepAlive.idle)
    }

    @Test func runningOutOfDescriptorsNamesTheLimitAndTheFix() {
        let error = SocketError("connect 127.0.0.1:9001", code: EMFILE)
        #expect(error.description == "connect 127.0.0.1:9001: Too many open files "
                + "(this process may open \(DescriptorLimit.current) descriptors; raise the limit with ulimit -n)")
        #expect(error.isOutOfDescriptors)
        #expect(DescriptorLimit.raiseToMaximum() >= DescriptorLimit.current)
    }

    @Test func silentConnectionsBeyondTheHelloBudgetPushOutTheOldestAndNeverLockOutAClient() async throws {
        var options = nodeTests.options(token: "secret")
        options.maxPendingConnections = 8
        options.maxPendingPerAddress = 4
        try await nodeTests.withNode(options) { node in
            var silent: [Socket] = []
            defer { for socket in silent { socket.close() } }
            for _ in 0..<40 { silent.append(try await rawClient(node, saying: [])) }
            // At most the budget (the cap of one address gives way to the budget for a moment,
            // for connections accepted faster than their hellos can be read).
            try await awaitState(upTo: .seconds(5)) { node.connectionCount <= 8 }
            let peer = try await nodeTests.connect(node, token: "secret")
            defer { peer.close() }
            #expect(try await nodeTests.running(peer) == 0)
            // The oldest silent ones were closed by the node.
            #expect(try await readToEnd(silent[0], limit: .seconds(5)).isEmpty)
        }
    }

    /// On a manual clock (sweeps every 150 ms): connections that send no hello within 600 ms
    /// are closed at the sweep that finds them late, and the log says so: the first time at
    /// once, later ones summed, never a line per connection (a flood of silent sockets must
    /// not flood the log).
    @Test func connectionsThatSendNoHelloInTimeAreClosedAndTheLogSumsThem() async throws {
        var options = nodeTests.options()
        options.helloTimeout = .milliseconds(600)
        let clock = ManualClock(), start = clock.now
        let log = LogLines()
        let node = try await Node.start(options, clock: clock, log: { log.append($0) })
        do {
            let first = try await rawClient(node, saying: [])
            defer { first.close() }
            try await awaitState(upTo: .seconds(60)) { node.connectionCount == 1 }
            await sweeps(1...4, on: clock, from: start)
            #expect(try await readToEnd(first, limit: .seconds(60)).isEmpty)
            try await log.waitFor("[Node] Closed 1 connection(s) that had not finished their hello within 0.6 s")

            var late: [Socket] = []
            defer { for socket in late { socket.close() } }
            for _ in 0..<3 { late.append(try await rawClient(node, saying: [])) }
            try await awaitState(upTo: .seconds(60)) { node.connectionCount == 3 }
            await sweeps(5...8, on: clock, from: start)
            for socket in late { #expect(try await readToEnd(socket, limit: .seconds(60)).isEmpty) }
            try await awaitState(upTo: .seconds(60)) { node.connectionCount == 0 }
            // Within the interval of the first line: counted, not yet said; said by the first
            // sweep 10 s after it (at 10.65 s).
            #expect(log.matching("had not finished their hello within").count == 1)
            await sweeps(9...70, on: clock, from: start)
            #expect(log.matching("had not finished their hello within").count == 1)
            await clock.waitUntilPending(at: start + .milliseconds(150 * 71))
            clock.advance(by: .milliseconds(150))
            try await log.waitFor("[Node] Closed 3 more connection(s) that had not finished their hello within 0.6 s")
            #expect(log.matching("had not finished their hello within").count == 2)
        } catch {
            await node.stop(grace: .seconds(1))
            throw error
        }
        await node.stop(grace: .seconds(1))
    }

    @Test func aClientBeyondMaxConnectionsIsAnsweredBusy() async throws {
        var options = nodeTests.options()
        options.maxConnections = 2
        try await nodeTests.withNode(options) { node in
            let first = try await nodeTests.connect(node), second = try await nodeTests.connect(node)
            defer { first.close(); second.close() }
            await #expect(throws: WireError(code: "busy", message: "too many connections (at most 2)")) {
                _ = try await nodeTests.connect(node)
            }
            second.close()
            try await awaitState(upTo: .seconds(5)) { node.connectionCount == 1 }
            let third = try await nodeTests.connect(node)
            third.close()
        }
    }
}
