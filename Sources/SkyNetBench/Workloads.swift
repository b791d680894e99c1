import Foundation
import SkyNet
import SkyNetCluster
import SkyNetWork

/// The workloads of BENCHMARKS.md. Each returns its rows; `runs` repeats every measurement.
struct Workloads {
    let skynet: URL
    let bench: URL
    let runs: Int
    /// dask's W2 rate (tasks/s), measured by run_peers.sh in the same sitting: W2's 25x target.
    let daskW2: Double
    /// Ray's A2 rate (calls/s), measured by bench_actors.py in the same sitting: A2's 10x target.
    let rayA2: Double
    /// W10's number of tasks (10,000,000; smaller only while developing the benchmark).
    let w10Total: Int

    /// W1–W3: 3 nodes × 4 slots, a coordinator that only dispatches; W2 over 20,000 no-op tasks.
    func dispatchOnly() throws -> [Row] {
        let cluster = try BenchCluster(skynet: skynet, count: 3)
        defer { cluster.stop() }
        func scan(_ total: Int, _ duration: Double) throws -> ScanRun {
            let run = try ScanRun.run(skynet, ["--cluster", cluster.file, "--total", String(total), "--duration",
                                               String(duration), "--local-capacity", "0", "--failing-every", "0"])
            guard run.completed == total else { throw BenchError("\(run.completed)/\(total) completed") }
            return run
        }
        _ = try scan(100, 0)  // warm-up: connections, page cache
        let w1 = try (0..<runs).map { _ in try scan(20, 1.0).seconds }
        let w2 = try (0..<runs).map { _ in 20_000 / (try scan(20_000, 0).seconds) }
        let w3 = try (0..<runs).map { _ in (200 * 0.01 / 12) / (try scan(200, 0.01).seconds) }
        let w1Row = Row(workload: "W1", measure: "20 x 1 s", unit: "s", values: w1, ideal: "2.000", target: "<= 2.010",
                        met: median(w1) <= 2.01)
        var w2Row = Row(workload: "W2", measure: "20000 no-op", unit: "tasks/s", values: w2,
                        target: String(format: ">= 50000 and >= 25x dask (%.0f)", 25 * daskW2),
                        met: median(w2) >= 50_000 && median(w2) >= 25 * daskW2)
        w2Row.note = String(format: "%.1fx dask, taking dask's W2 as %.0f tasks/s (--dask-w2)", median(w2) / daskW2, daskW2)
        let w3Row = Row(workload: "W3", measure: "200 x 10 ms efficiency", unit: "ratio", values: w3, ideal: "1.000 (0.167 s)",
                        target: ">= 0.95", met: median(w3) >= 0.95)
        return [w1Row, w2Row, w3Row]
    }

    /// W4: W1 with every 10th call per process failing, on the default topology: the
    /// coordinator's own 4 slots first, then 3 nodes × 4. Fresh processes every run, so each
    /// run starts its failure counters at zero.
    func injectedFailures() throws -> [Row] {
        var seconds: [Double] = [], completed: [Double] = [], reruns: [Double] = []
        for _ in 0..<runs {
            let cluster = try BenchCluster(skynet: skynet, count: 3, failingEvery: 10)
            defer { cluster.stop() }
            let run = try ScanRun.run(skynet, ["--cluster", cluster.file, "--total", "20", "--duration", "1",
                                               "--failing-every", "10"])
            seconds.append(run.seconds)
            completed.append(Double(run.completed))
            reruns.append(Double(run.reruns))
        }
        let ideal = idealW4()
        var row = Row(workload: "W4", measure: "20 x 1 s, failing every 10th", unit: "s", values: seconds,
                      ideal: String(format: "%.3f", ideal), target: String(format: "<= %.3f, 20/20", ideal + 0.05),
                      met: median(seconds) <= ideal + 0.05 && completed.allSatisfy { $0 == 20 })
        row.note = "completed per run \(completed.map { Int($0) }), re-runs per run \(reruns.map { Int($0) })"
        return [row]
    }

    /// Our failure model on 16 slots: the API call fails at once (before the work), on the
    /// 10th call of each process. Tasks go to the first free slot in order (local, n1, n2,
    /// n3); a failed one re-runs on the local system. Simulated to the end.
    func idealW4() -> Double {
        var calls = [0, 0, 0, 0]
        var busy: [[Double]] = [[], [], [], []]  // finish times per system, 4 slots each
        var pending = Array(repeating: false, count: 20)  // whether each task is a re-run
        var time = 0.0, finish = 0.0
        while !pending.isEmpty {
            for system in 0..<4 { busy[system].removeAll { $0 <= time + 1e-9 } }
            let free = (0..<4).filter { busy[$0].count < 4 }
            // The first task with a free slot it may take: a re-run only the local system's.
            guard let index = pending.firstIndex(where: { $0 ? free.contains(0) : !free.isEmpty }) else {
                time = busy.flatMap { $0 }.filter { $0 > time }.min() ?? time
                continue
            }
            let system = pending.remove(at: index) ? 0 : free[0]
            calls[system] += 1
            if calls[system] % 10 == 0 {
                pending.append(true)  // fails at once
            } else {
                busy[system].append(time + 1.0)
                finish = max(finish, time + 1.0)
            }
        }
        return finish
    }

    /// W5: remote no-op round trip through the product (RemoteSystem over a PeerConnection),
    /// against the raw ping-pong floor measured in the same run.
    func roundTrip() throws -> [Row] {
        let rounds = 20_000
        let cluster = try BenchCluster(skynet: skynet, count: 1)
        defer { cluster.stop() }
        let node = cluster.nodes[0]
        var p50: [Double] = [], p99: [Double] = [], rawP50: [Double] = [], rawP99: [Double] = []
        for _ in 0..<runs {
            let samples = try roundTrips(to: node, token: nil, rounds: rounds)
            p50.append(percentile(samples, 50))
            p99.append(percentile(samples, 99))
            let floor = try PingPong.measure(bench: bench, rounds: rounds)
            rawP50.append(percentile(floor, 50))
            rawP99.append(percentile(floor, 99))
        }
        let limit = 2 * median(rawP50)
        return [
            Row(workload: "W5", measure: "round trip p50", unit: "µs", values: p50, ideal: String(format: "%.1f (raw)", median(rawP50)),
                target: String(format: "<= %.1f (2x raw)", limit), met: median(p50) <= limit),
            Row(workload: "W5", measure: "round trip p99", unit: "µs", values: p99, ideal: String(format: "%.1f (raw)", median(rawP99))),
            Row(workload: "W5", measure: "raw ping-pong p50", unit: "µs", values: rawP50),
        ]
    }

    /// `rounds` remote no-op round trips to `node` through the product, in µs, after a warm-up
    /// of a tenth as many; each runs where a scan's attempt on that node runs (its link's loop).
    func roundTrips(to node: NodeProcess, token: String?, rounds: Int) throws -> [Double] {
        try blocking {
            let peer = try await PeerConnection.open(name: node.name, host: node.host, port: node.port,
                                                     token: token, timeout: .seconds(5))
            defer { peer.close() }
            let remote = RemoteSystem(name: node.name, peer: peer, timeout: .seconds(5))
            return try await withTaskExecutorPreference(remote.preferredExecutor) {
                var samples: [Double] = []
                let clock = ContinuousClock()
                for round in 0..<(rounds + rounds / 10) {
                    let start = clock.now
                    _ = try await remote.run(ScanTask(input: round, duration: 0))
                    if round >= rounds / 10 { samples.append((clock.now - start).seconds * 1e6) }
                }
                return samples
            }
        }
    }

    /// W6: 16 nodes × 4 slots, 640 tasks of 100 ms.
    func wide() throws -> [Row] {
        let cluster = try BenchCluster(skynet: skynet, count: 16)
        defer { cluster.stop() }
        let arguments = ["--cluster", cluster.file, "--local-capacity", "0", "--failing-every", "0"]
        _ = try ScanRun.run(skynet, arguments + ["--total", "64", "--duration", "0"])
        let seconds = try (0..<runs).map { _ in
            let run = try ScanRun.run(skynet, arguments + ["--total", "640", "--duration", "0.1"])
            guard run.completed == 640 else { throw BenchError("W6: \(run.completed)/640") }
            return run.seconds
        }
        return [Row(workload: "W6", measure: "16 nodes, 640 x 100 ms", unit: "s", values: seconds, ideal: "1.000",
                    target: "<= 1.100", met: median(seconds) <= 1.1)]
    }

    /// W7: a node's start (exec to `listening`) and idle memory; a million no-op tasks on the
    /// coordinator's own system.
    func footprint() throws -> [Row] {
        var ready: [Double] = [], idle: [Double] = []
        for _ in 0..<max(runs, 10) {
            let skynet = self.skynet
            let (milliseconds, kib) = try blocking {
                let clock = ContinuousClock(), start = clock.now
                let node = try await NodeProcess.start(executable: skynet, name: "ready")
                let elapsed = (clock.now - start).seconds * 1000
                Children.track(node.processIdentifier)
                defer { Children.untrack(node.processIdentifier) }
                try await Task.sleep(for: .milliseconds(200))
                let kib = residentKiB(of: node.processIdentifier) ?? -1
                await node.stop()
                return (elapsed, kib)
            }
            ready.append(milliseconds)
            idle.append(Double(kib))
        }
        let empty = try emptyClusterFile()
        var seconds: [Double] = [], peak: [Double] = []
        for _ in 0..<max(1, runs / 2) {
            let child = try ChildRun.run(skynet.path, ["scan", "--total", "1000000", "--duration", "0",
                                                           "--failing-every", "0", "--cluster", empty])
            guard child.stdout.contains("Finished 1000000 scans") else { throw BenchError("W7: the million did not finish") }
            seconds.append(child.seconds)
            peak.append(Double(child.peakKiB))
        }
        return [
            Row(workload: "W7", measure: "node start to ready", unit: "ms", values: ready, target: "<= 50", met: median(ready) <= 50),
            Row(workload: "W7", measure: "node idle RSS", unit: "KiB", values: idle, target: "<= 20480 (20 MB)", met: median(idle) <= 20 * 1024),
            Row(workload: "W7", measure: "1,000,000 local no-op: time", unit: "s", values: seconds, target: "<= 20", met: median(seconds) <= 20),
            Row(workload: "W7", measure: "1,000,000 local no-op: peak RSS", unit: "KiB", values: peak, target: "<= 204800 (200 MB)", met: median(peak) <= 200 * 1024),
        ]
    }
}

func median(_ values: [Double]) -> Double { Row(workload: "", measure: "", unit: "", values: values).median }

/// A process's resident memory now (`VmRSS`), in KiB.
func residentKiB(of pid: Int32) -> Int? { statusNumber("VmRSS", of: pid) }

/// A number field of `/proc/PID/status`: KiB for `VmRSS`, `VmHWM` …, a count for `Threads`.
func statusNumber(_ field: String, of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
    return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "")
}
