import Foundation
import SkyNet

extension Workloads {
    /// W9: 200 node processes × 4 slots and a coordinator that only dispatches 4,000 tasks of
    /// 1 s (ideal 5.0 s), after a warm-up scan of 800 no-op tasks. Measures the scan's
    /// seconds, when the last of the 200 peers connected (the largest `time` of the
    /// `connected` events; fewer than 200 peers fails the workload) and the coordinator's
    /// peak RSS. Every run is a fresh scan against the same nodes.
    func scale() throws -> [Row] {
        let count = 200, total = 4000
        let cluster = try BenchCluster(skynet: skynet, count: count, startingAtOnce: 16)
        defer { cluster.stop() }
        let arguments = ["--cluster", cluster.file, "--local-capacity", "0", "--failing-every", "0"]
        let warmUp = try ScanRun.run(skynet, arguments + ["--total", "800", "--duration", "0"])
        guard warmUp.completed == 800 else { throw BenchError("W9 warm-up: \(warmUp.completed)/800 completed") }
        var seconds: [Double] = [], connected: [Double] = [], peak: [Double] = []
        for _ in 0..<runs {
            let run = try ScanRun.run(skynet, arguments + ["--total", String(total), "--duration", "1"])
            guard run.completed == total else { throw BenchError("W9: \(run.completed)/\(total) completed") }
            let peers = Set(run.connected.map(\.system))
            guard peers.count == count, let last = run.connected.map(\.time).max() else {
                throw BenchError("W9: \(peers.count) of \(count) peers connected")
            }
            seconds.append(run.seconds)
            connected.append(last)
            peak.append(Double(run.peakKiB))
        }
        return [
            Row(workload: "W9", measure: "200 nodes, 4000 x 1 s", unit: "s", values: seconds, ideal: "5.000", target: "<= 5.150",
                met: median(seconds) <= 5.15),
            Row(workload: "W9", measure: "every node connected within", unit: "s", values: connected, target: "<= 1.000",
                met: median(connected) <= 1.0),
            Row(workload: "W9", measure: "coordinator peak RSS", unit: "KiB", values: peak, target: "<= 97656 (100 MB)",
                met: median(peak) <= 97_656),
        ]
    }

    /// W10: `total` (10,000,000 unless `--w10-total` says otherwise) no-op tasks on the
    /// coordinator's own system, its plain output drained through a pipe: wall time, peak RSS,
    /// and how soon the first `Completed:` line came. The same at 1,000,000 gives a second
    /// peak RSS, the evidence that memory does not grow with `--total`.
    func tenMillion() throws -> [Row] {
        let total = w10Total, smaller = min(1_000_000, w10Total)
        let empty = try emptyClusterFile()
        var seconds: [Double] = [], peak: [Double] = [], first: [Double] = [], smallerPeak: [Double] = []
        for _ in 0..<max(1, runs / 2) {
            let run = try localNoOps(total, cluster: empty)
            seconds.append(run.seconds)
            peak.append(Double(run.peakKiB))
            first.append((run.firstLineSeconds ?? .nan) * 1000)
        }
        for _ in 0..<max(1, runs / 2) {
            smallerPeak.append(Double(try localNoOps(smaller, cluster: empty).peakKiB))
        }
        let label = grouped(total), smallerLabel = grouped(smaller)
        var peakRow = Row(workload: "W10", measure: "\(label) local no-op: peak RSS", unit: "KiB", values: peak,
                          target: "<= 153600 (150 MB)", met: median(peak) <= 150 * 1024)
        peakRow.note = String(format: "%.2fx the peak RSS at %@", median(peak) / median(smallerPeak), smallerLabel)
        return [
            Row(workload: "W10", measure: "\(label) local no-op: time", unit: "s", values: seconds, target: "<= 60",
                met: median(seconds) <= 60),
            peakRow,
            Row(workload: "W10", measure: "\(label): first task started", unit: "ms", values: first, target: "<= 50",
                met: median(first) <= 50),
            Row(workload: "W10", measure: "\(smallerLabel): peak RSS", unit: "KiB", values: smallerPeak),
        ]
    }

    /// `skynet scan --total TOTAL --duration 0 --failing-every 0 --cluster EMPTY`, plain output
    /// through a pipe; throws unless it exited 0 saying `Finished TOTAL scans`.
    private func localNoOps(_ total: Int, cluster: String) throws -> ChildRun {
        let run = try ChildRun.stream(skynet.path, ["scan", "--total", String(total), "--duration", "0", "--failing-every", "0",
                                                    "--cluster", cluster],
                                      firstLine: { $0.hasPrefix("Completed: ") }, deadline: .seconds(600))
        guard run.status == 0, run.stdout.contains("Finished \(total) scans") else {
            throw BenchError("W10: \(total) tasks: status \(run.status), output ends \(run.stdout.suffix(200).debugDescription)")
        }
        guard run.firstLineSeconds != nil else { throw BenchError("W10: no `Completed:` line in \(run.bytes) bytes") }
        return run
    }

    /// A cluster file with no nodes: the coordinator's own system alone.
    func emptyClusterFile() throws -> String {
        let empty = NSTemporaryDirectory() + "skynet-bench-empty.json"
        try #"{"nodes":[]}"#.write(toFile: empty, atomically: true, encoding: .utf8)
        return empty
    }
}

/// 10000000 → "10,000,000".
func grouped(_ number: Int) -> String {
    var digits = String(number.magnitude), groups: [Substring] = []
    while digits.count > 3 {
        groups.insert(Substring(digits.suffix(3)), at: 0)
        digits.removeLast(3)
    }
    return (number < 0 ? "-" : "") + ([Substring(digits)] + groups).joined(separator: ",")
}
