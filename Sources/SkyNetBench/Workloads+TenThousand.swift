import Foundation
import SkyNet
import SkyNetRuntime

extension Workloads {
    /// W15: one coordinator linked to 10,000 cheap nodes (`NodeHost`: 4 processes of 2,500
    /// `Node`s, each on a loopback port of its own), 100,000 tasks of 1 s over their 40,000
    /// slots (ideal 2.5 s), after a warm-up of 10,000 no-op tasks. Measures the scan's
    /// seconds, the coordinator's most threads and peak RSS, and what one more link costs it:
    /// the same scan per slot over the first 1,000 nodes (10,000 tasks), the difference spread
    /// over the 9,000 links more.
    func tenThousandNodes() throws -> [Row] {
        let hosts = try NodeHosts(bench: bench, count: 4, nodesEach: 2_500)
        defer { hosts.stop() }
        let all = try hosts.clusterFile(first: 10_000), some = try hosts.clusterFile(first: 1_000)
        defer { Children.remove(all); Children.remove(some) }
        /// With `nodes`, every one of them must have connected; without, at least one.
        func scan(_ file: String, _ total: Int, _ duration: String, nodes: Int?) throws -> ScanRun {
            let run = try ScanRun.run(skynet, ["--cluster", file, "--local-capacity", "0", "--failing-every", "0",
                                               "--total", String(total), "--duration", duration])
            guard run.completed == total else { throw BenchError("W15: \(run.completed)/\(total) completed") }
            let peers = Set(run.connected.map(\.system)).count
            guard nodes.map({ peers == $0 }) ?? (peers > 0) else {
                throw BenchError("W15: \(peers) of \(nodes.map(String.init) ?? "the") peers connected")
            }
            return run
        }
        // The warm-up's no-op tasks are over before the last links are up (a scan hands its
        // tasks to the first peers linked): it is not asked to have linked them all.
        _ = try scan(all, 10_000, "0", nodes: nil)
        var seconds: [Double] = [], threads: [Double] = [], peak: [Double] = [], connected: [Double] = []
        var linkKiB: [Double] = [], linkThreads: [Double] = []
        for _ in 0..<runs {
            let large = try scan(all, 100_000, "1", nodes: 10_000)
            let small = try scan(some, 10_000, "1", nodes: 1_000)
            seconds.append(large.seconds)
            threads.append(Double(large.peakThreads))
            peak.append(Double(large.peakKiB))
            connected.append(large.connected.map(\.time).max() ?? .nan)
            linkKiB.append(Double(large.peakKiB - small.peakKiB) / 9_000)
            linkThreads.append(Double(large.peakThreads - small.peakThreads) / 9_000)
        }
        return [
            Row(workload: "W15", measure: "10000 nodes, 100000 x 1 s", unit: "s", values: seconds, ideal: "2.500",
                target: "<= 4.000", met: median(seconds) <= 4),
            Row(workload: "W15", measure: "coordinator's most threads", unit: "threads", values: threads, target: "<= 16",
                met: threads.allSatisfy { $0 <= 16 }),
            Row(workload: "W15", measure: "coordinator peak RSS", unit: "KiB", values: peak, target: "<= 524288 (512 MB)",
                met: median(peak) <= 524_288),
            Row(workload: "W15", measure: "every node connected within", unit: "s", values: connected),
            Row(workload: "W15", measure: "one more link: RSS", unit: "KiB", values: linkKiB),
            Row(workload: "W15", measure: "one more link: threads", unit: "threads", values: linkThreads),
        ]
    }
}

/// `skynet-bench node-host` processes, started at once and awaited until each is ready; their
/// nodes' entries are read from the files they wrote. Stopped by `stop()` (and with the
/// benchmark, however it ends: their stdin is its pipe).
final class NodeHosts: Sendable {
    private let children: [ChildProcess]
    /// Each host's nodes' entries, in its order.
    private let entries: [[String]]

    init(bench: URL, count: Int, nodesEach: Int) throws {
        let files = (0..<count).map { _ in Children.temporary(NSTemporaryDirectory() + "skynet-bench-hosts-\(UUID().uuidString)") }
        defer { for file in files { Children.remove(file) } }
        let started = Locked<[ChildProcess]>([])
        do {
            try blocking {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for file in files {
                        group.addTask {
                            var options = ChildProcess.Options(arguments: ["node-host", String(nodesEach), file])
                            options.stdin = .pipe
                            options.stdout = .lines(maxLength: 4096, keep: 16)
                            options.stderr = .inherit
                            let spawnOptions = options
                            let child = try await onBlockingPool { try ChildProcess.spawn(bench.path, spawnOptions) }
                            Children.track(child.pid)
                            started.withLock { $0.append(child) }
                            _ = try await child.waitForLine(timeout: .seconds(300)) { $0 == "ready" }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            children = started.withLock { $0 }
            entries = try files.map { try String(contentsOfFile: $0, encoding: .utf8).split(separator: "\n").map(String.init) }
            guard entries.allSatisfy({ $0.count == nodesEach }) else {
                throw BenchError("node hosts listed \(entries.map(\.count)) nodes, not \(nodesEach) each")
            }
        } catch {
            Self.stop(started.withLock { $0 })
            throw error
        }
    }

    /// A cluster file of the first `count` nodes (the hosts' nodes in turn, so a smaller cluster
    /// still spreads over every host).
    func clusterFile(first count: Int) throws -> String {
        let rows = entries.map(\.count).min() ?? 0
        let interleaved = (0..<rows).flatMap { row in entries.map { $0[row] } }
        let file = Children.temporary(NSTemporaryDirectory() + "skynet-bench-w15-\(UUID().uuidString).json")
        try #"{"nodes":[\#(interleaved.prefix(count).joined(separator: ","))]}"#.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    func stop() { Self.stop(children) }

    private static func stop(_ children: [ChildProcess]) {
        _ = try? blocking {
            await withTaskGroup(of: Void.self) { group in
                for child in children { group.addTask { await child.stop(grace: .seconds(5)) } }
            }
        }
        for child in children { Children.untrack(child.pid) }
    }
}
