import Foundation
import SkyNet
import SkyNetCluster
import SkyNetRuntime

/// Node processes for one workload, with a cluster file naming them; stopped by `stop()`.
final class BenchCluster: Sendable {
    let nodes: [NodeProcess]
    let file: String

    /// Starts `count` nodes, each given `arguments` beside `--failing-every` (and `environment`
    /// instead of ours, when given), at most `startingAtOnce` at a time (two cores swamped by
    /// a hundred starting processes would time some of them out). Each node is tracked for
    /// `Children` as soon as it is ready; if any node cannot start, or the cluster file does
    /// not read back as these nodes, the ones already started are stopped before it throws.
    init(skynet: URL, count: Int, failingEvery: Int = 0, arguments: [String] = [], environment: [String: String]? = nil,
         startingAtOnce: Int = 16) throws {
        let started = Locked<[(index: Int, node: NodeProcess)]>([])
        let file = Children.temporary(NSTemporaryDirectory() + "skynet-bench-cluster-\(UUID().uuidString).json")
        do {
            try blocking {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in stride(from: 1, through: count, by: 1) {
                        if index > max(1, startingAtOnce) { _ = try await group.next() }
                        group.addTask {
                            let node = try await NodeProcess.start(executable: skynet, name: "n\(index)",
                                                                   arguments: ["--failing-every", String(failingEvery)] + arguments,
                                                                   environment: environment)
                            Children.track(node.processIdentifier)
                            started.withLock { $0.append((index, node)) }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let nodes = started.withLock { $0 }.sorted { $0.index < $1.index }.map(\.node)
            let entries = nodes.map { #"{"name":"\#($0.name)","host":"\#($0.host)","port":\#($0.port)}"# }
            try #"{"nodes":[\#(entries.joined(separator: ","))]}"#.write(toFile: file, atomically: true, encoding: .utf8)
            try Self.check(file, names: nodes.map(\.name), count: count)
            self.nodes = nodes
            self.file = file
        } catch {
            Self.stop(started.withLock { $0 }.map(\.node))
            Children.remove(file)
            throw error
        }
    }

    /// Reads `file` back as the coordinator will (`ClusterConfig`): exactly `names`, in order,
    /// each on a port of its own.
    private static func check(_ file: String, names: [String], count: Int) throws {
        let config = try ClusterConfig.load(from: file)
        let ports = Set(config.nodes.map { "\($0.host):\($0.port)" })
        guard names.count == count, config.nodes.map(\.name) == names, ports.count == count else {
            throw BenchError("cluster file \(file) lists \(config.nodes.count) nodes on \(ports.count) addresses, not the \(count) started")
        }
    }

    func stop() {
        Self.stop(nodes)
        Children.remove(file)
    }

    /// Stops `nodes` (all at once: each waits out its own grace) and untracks them.
    private static func stop(_ nodes: [NodeProcess]) {
        _ = try? blocking {
            await withTaskGroup(of: Void.self) { group in
                for node in nodes { group.addTask { await node.stop() } }
            }
        }
        for node in nodes { Children.untrack(node.processIdentifier) }
    }
}
