import Foundation
@testable import SkyNet
@testable import SkyNetCommands
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// What `NodeService` tells systemd about an in-process node: its status when it changes and
/// only then, the watchdog meanwhile, the drain and the end.
@Suite(.timeLimit(.minutes(1)))
struct NodeServiceTests {
    @Test func theStatusFollowsTheNodeAndIsSentOnlyWhenItChanges() async throws {
        var options = Node.Options(name: "served")
        options.capacity = 2
        // The raw client never says hello: under load the watchdog ticks below may take longer
        // than the default hello deadline (3 s), which would close it and change the status.
        options.helloTimeout = .seconds(60)
        let node = try await Node.start(options)
        let socket: NotifySocket
        do { socket = try NotifySocket(abstract: true) } catch {
            await node.stop(grace: .zero)
            throw error
        }
        let environment = ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "200000"]
        let service = NodeService.ready(node, spawned: false, environment: environment, statusInterval: .milliseconds(20)) { _ in }
        let outcome = await Result { try await follow(node, socket: socket, service: service) }
        service.stopped()
        await node.stop(grace: .zero)
        await socket.close()
        try outcome.get()
    }

    /// `WATCHDOG_USEC=1` (a typo of a unit) would be a ping loop with no wait: with the 10 ms
    /// floor, half a second holds some 50 pings, not thousands.
    @Test func aWatchdogOfOneMicrosecondPingsEveryTenMillisecondsNotInALoop() async throws {
        let node = try await Node.start(Node.Options(name: "served"))
        let socket: NotifySocket
        do { socket = try NotifySocket(abstract: true) } catch {
            await node.stop(grace: .zero)
            throw error
        }
        let lines = Locked<[String]>([])
        let service = NodeService.ready(node, spawned: false, environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "1"]) { line in
            lines.withLock { $0.append(line) }
        }
        let started = ContinuousClock.now
        // Generous: in the phase where every unit suite runs at once, the pool that runs the
        // watchdog's timer can stand still for more than 10 s on two cores. The rate below is
        // measured against the time it really ran.
        let seen = await socket.wait(for: 5, timeout: .seconds(60)) { $0 == "WATCHDOG=1" }
        try? await Task.sleep(for: .milliseconds(500))
        service.stopped()
        let elapsed = ContinuousClock.now - started
        _ = await socket.wait(timeout: .seconds(10)) { $0 == "STATUS=stopped" }
        await node.stop(grace: .zero)
        await socket.close()
        #expect(seen, "\(socket.datagrams.prefix(10))")
        let pings = socket.datagrams.filter { $0 == "WATCHDOG=1" }.count
        // At most one per 10 ms of the time it ran (and a few for a late start).
        #expect(pings <= Int(elapsed / .milliseconds(10)) + 5, "\(pings) pings in \(elapsed)")
        #expect(lines.withLock { $0 }.count { $0.contains("WATCHDOG_USEC=1") } == 1, "\(lines.withLock { $0 })")
    }

    private func follow(_ node: Node, socket: NotifySocket, service: NodeService) async throws {
        #expect(await socket.wait { $0 == "READY=1\nSTATUS=accepting: 0/2 running, 0 connections" }, "\(socket.datagrams)")
        let client = try Socket.connect(host: "127.0.0.1", port: node.port, timeout: .seconds(5))
        defer { client.close() }
        #expect(await socket.wait { $0.hasSuffix("STATUS=accepting: 0/2 running, 1 connection") }, "\(socket.datagrams)")
        // Three more watchdog ticks (300 ms, some fifteen status checks) repeat no status.
        let seen = socket.datagrams.count
        #expect(await socket.wait(for: seen + 3) { _ in true })
        #expect(socket.datagrams.filter { $0.contains("STATUS=") }.count == 2, "\(socket.datagrams)")
        #expect(socket.datagrams.filter { $0.contains("WATCHDOG=1") }.count >= 3)

        service.stopping(within: .seconds(30))
        #expect(await socket.wait { $0 == "STOPPING=1\nSTATUS=draining: 0 running, timeout 30 s" }, "\(socket.datagrams)")
        service.stopped()
        #expect(await socket.wait { $0 == "STATUS=stopped" }, "\(socket.datagrams)")
    }
}

private extension Result where Failure == any Error {
    /// The outcome of `body`, thrown or returned.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
