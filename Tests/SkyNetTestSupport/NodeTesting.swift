import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetWire
@testable import SkyNetWork

/// A node in this process, spoken to over loopback: what a suite that tests a node (or drives
/// one) conforms to, to start, stop and talk to it.
package protocol NodeTesting {}

/// The node helpers for a test that is not itself a `NodeTesting` suite.
package struct NodeHarness: NodeTesting {
    package init() {}
}

extension NodeTesting {
    package func options(capacity: Int = 4, token: String? = nil) -> Node.Options {
        var options = Node.Options(name: "beta")
        options.capacity = capacity
        options.failingEvery = 0
        options.token = token
        // Not the node's 3 s: this node's clients share the test runner's pool, which the unit
        // tests' opening burst starves for seconds, so a hello or a proof can be sent late.
        // The tests of the hello bound set their own.
        options.helloTimeout = .seconds(30)
        return options
    }

    /// Runs `body` with a node that is stopped on every path, early returns and throws included.
    package func withNode<T>(_ options: Node.Options, _ body: (Node) async throws -> T) async throws -> T {
        let node = try await Node.start(options)
        do {
            let result = try await body(node)
            await node.stop(grace: .seconds(1))
            return result
        } catch {
            await node.stop(grace: .seconds(1))
            throw error
        }
    }

    package func withNode<T>(capacity: Int = 4, token: String? = nil, _ body: (Node) async throws -> T) async throws -> T {
        try await withNode(options(capacity: capacity, token: token), body)
    }

    /// A coordinator's connection to `node`. The bound only ends a hang: in the unit tests'
    /// opening burst a welcome can take 15 s on two cores, and a hello that timed out would
    /// fail the test (or, with a wrong token, leave the node no failed login to count).
    package func connect(_ node: Node, token: String? = nil, keepAlive: Duration = PeerConnection.defaultKeepAliveInterval) async throws -> PeerConnection {
        try await PeerConnection.open(name: "beta", host: "127.0.0.1", port: node.port, token: token, timeout: .seconds(60),
                                      keepAliveInterval: keepAlive)
    }

    package func scan(_ peer: PeerConnection, id: Int? = nil, duration: Double = 0) async throws -> Reply {
        let id = id ?? peer.nextID()
        return try await peer.request(id: id, .scan(id: id, task: ScanTask(input: id, duration: duration)))
    }

    package func running(_ peer: PeerConnection) async throws -> Int {
        let id = peer.nextID()
        guard case .pong(_, let pong) = try await peer.request(id: id, .ping(id: id)) else { return -1 }
        return pong.running
    }
}
