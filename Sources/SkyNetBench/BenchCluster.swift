import Foundation
import SkyNet

/// Node processes for one workload, with a cluster file naming them; stopped by `stop()`.
final class BenchCluster: Sendable {
    let nodes: [NodeProcess]
    let file: String

    /// Starts `count` nodes, each given `arguments` beside `--failing-every` (and `environment`
    /// instead of ours, when given).
    init(skynet: URL, count: Int, failingEvery: Int = 0, arguments: [String] = [], environment: [String: String]? = nil) throws {
        nodes = try blocking {
            try await withThrowingTaskGroup(of: NodeProcess.self) { group in
                for index in 1...count {
                    group.addTask {
                        try await NodeProcess.start(executable: skynet, name: "n\(index)",
                                                    arguments: ["--failing-every", String(failingEvery)] + arguments,
                                                    environment: environment)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        for node in nodes { Children.track(node.processIdentifier) }
        file = NSTemporaryDirectory() + "skynet-bench-cluster-\(UUID().uuidString).json"
        let entries = nodes.map { #"{"name":"\#($0.name)","host":"\#($0.host)","port":\#($0.port)}"# }
        try #"{"nodes":[\#(entries.joined(separator: ","))]}"#.write(toFile: file, atomically: true, encoding: .utf8)
    }

    func stop() {
        let nodes = self.nodes
        for node in nodes { Children.untrack(node.processIdentifier) }
        _ = try? blocking {
            await withTaskGroup(of: Void.self) { group in
                for node in nodes { group.addTask { await node.stop() } }
            }
        }
        unlink(file)
    }
}

/// One `skynet scan --json` run: its summary.
struct ScanRun {
    let seconds: Double
    let completed: Int
    let reruns: Int

    /// Runs `skynet scan --json ARGUMENTS…` and reads the summary event (the last line).
    static func run(_ skynet: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> ScanRun {
        let child = try ChildRun.run(skynet.path, ["scan", "--json"] + arguments, environment: environment)
        guard let last = child.stdout.split(separator: "\n").last,
              let summary = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
              let seconds = summary["seconds"] as? Double, let completed = summary["completed"] as? Int
        else { throw BenchError("skynet scan \(arguments.joined(separator: " ")) gave no summary (status \(child.status))") }
        return ScanRun(seconds: seconds, completed: completed, reruns: summary["reruns"] as? Int ?? 0)
    }
}

/// The node processes the benchmark has running, killed if it is interrupted (SIGINT or
/// SIGTERM), so that no node outlives it.
enum Children {
    private static let pids = Locked<Set<Int32>>([])

    static func track(_ pid: Int32) { _ = pids.withLock { $0.insert(pid) } }
    static func untrack(_ pid: Int32) { _ = pids.withLock { $0.remove(pid) } }

    /// Installs the handlers; call once at start and keep what it returns alive (a dispatch
    /// source that is released stops).
    static func killOnInterrupt() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }
}
