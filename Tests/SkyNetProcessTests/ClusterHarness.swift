import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
@testable import SkyNetTransport

/// Real `skynet node` processes on loopback, and a cluster file that names them.
struct TestCluster: Sendable {
    let nodes: [NodeProcess]
    let folder: URL
    var clusterFile: String { folder.appendingPathComponent("cluster.json").path }

    /// Writes the cluster file for `nodes` plus any `extra` entries (e.g. a node not yet started).
    func writeClusterFile(extra: [ClusterConfig.Node] = [], timeout: Double? = nil) throws {
        var entries = nodes.map { ["name": $0.name, "host": $0.host, "port": $0.port] as [String: Any] }
        entries += extra.map { ["name": $0.name, "host": $0.host, "port": $0.port] }
        var root: [String: Any] = ["nodes": entries]
        if let timeout { root["timeout"] = timeout }
        try JSONSerialization.data(withJSONObject: root).write(to: URL(fileURLWithPath: clusterFile))
    }

    func node(_ name: String) -> NodeProcess? { nodes.first { $0.name == name } }

    /// Runs `skynet scan --cluster FILE ARGUMENTS…` to the end.
    func scan(_ arguments: [String], limit: Duration = .seconds(60)) async throws -> Finished {
        try await runSkynet(["scan", "--cluster", clusterFile] + arguments, limit: limit)
    }

    /// Starts `skynet scan --cluster FILE ARGUMENTS…` in the background.
    func startScan(_ arguments: [String]) throws -> RunningProcess {
        try RunningProcess(["scan", "--cluster", clusterFile] + arguments)
    }
}

/// Starts `count` nodes (named beta, gamma, …) with `--port 0`, waits until each is listening,
/// writes a cluster file, runs `body`, and stops every node on every path.
func withCluster<T: Sendable>(
    nodes count: Int, nodeArguments: [String] = [], _ body: (TestCluster) async throws -> T
) async throws -> T {
    let names = ["beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    return try await withCluster(nodes: names.prefix(count).map { ($0, nodeArguments) }, body)
}

/// The same with each node's name and arguments of its own, and where its stderr goes.
func withCluster<T: Sendable>(
    nodes: [(name: String, arguments: [String])], stderr: ChildProcess.Output = .null, _ body: (TestCluster) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-cluster-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var started: [NodeProcess] = []
    func stopAll() async {
        for node in started { await node.stop(grace: .seconds(3)) }
        try? FileManager.default.removeItem(at: folder)
    }
    do {
        for (name, arguments) in nodes {
            started.append(try await NodeProcess.start(executable: skynetBinary, name: name, arguments: arguments, stderr: stderr))
        }
        let cluster = TestCluster(nodes: started, folder: folder)
        try cluster.writeClusterFile()
        let result = try await body(cluster)
        await stopAll()
        return result
    } catch {
        await stopAll()
        throw error
    }
}

/// A free loopback port, found by binding port 0 (for a node the test starts later).
func freePort() throws -> Int {
    let socket = try Socket.listen(host: "127.0.0.1", port: 0)
    defer { socket.close() }
    return try socket.localAddress().port
}

extension Finished {
    /// Inputs of the `Completed:` lines, with the system that completed each (nil: local).
    var completions: [(input: Int, system: String?)] {
        lines.compactMap { line in
            guard line.hasPrefix("Completed: ") else { return nil }
            let words = line.dropFirst("Completed: ".count).split(separator: " ")
            guard let input = words.first.flatMap({ Int($0) }) else { return nil }
            return (input, words.count == 3 ? String(words[2]) : nil)
        }
    }

    var reruns: [String] { lines.filter { $0.hasPrefix("Re-run task: ") } }
}
