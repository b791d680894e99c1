import Foundation
import SkyNet
import SkyNetLocalHosts

extension Workloads {
    /// W8: 2,000 tasks of `/bin/true` (a command job, `t=/bin/true`) on 3 nodes × 4 slots,
    /// dispatch-only; beside GNU parallel `-j12 true` on the same inputs and a spawn floor
    /// (posix_spawn and wait, 2 at a time), each run measuring all three in turn.
    func commandJobs() throws -> [Row] {
        let total = 2000, job = "t=/bin/true"
        let inputs = (0..<total).map(String.init)  // the sector numbers: what `skynet scan` feeds without --inputs
        let inputsFile = NSTemporaryDirectory() + "skynet-bench-w8-\(UUID().uuidString).txt"
        try (inputs.joined(separator: "\n") + "\n").write(toFile: inputsFile, atomically: true, encoding: .utf8)
        defer { unlink(inputsFile) }
        let lookup = try blocking { await GNUParallel.lookUpOnPath() }
        let parallel = lookup.path
        if let reason = lookup.unavailableReason { note("W8: \(reason): its column and the 5x target are skipped") }
        let cluster = try BenchCluster(skynet: skynet, count: 3, arguments: ["--job", job])
        defer { cluster.stop() }
        func ours(_ count: Int) throws -> Double {
            let run = try ScanRun.run(skynet, ["--cluster", cluster.file, "--local-capacity", "0", "--failing-every", "0",
                                               "--job", job, "--total", String(count)])
            guard run.completed == count else { throw BenchError("W8: \(run.completed)/\(count) completed") }
            return Double(count) / run.seconds
        }
        func gnuParallel(_ path: String) throws -> Double {
            let child = try ChildRun.run(path, ["--will-cite", "-j12", "true", "::::", inputsFile])
            guard child.status == 0 else { throw BenchError("W8: parallel exited with status \(child.status)") }
            return Double(total) / child.seconds
        }
        _ = try ours(200)  // warm-up: connections, page cache
        if let parallel { _ = try gnuParallel(parallel) }
        var skynetRates: [Double] = [], parallelRates: [Double] = [], floorRates: [Double] = []
        for _ in 0..<runs {
            skynetRates.append(try ours(total))
            if let parallel { parallelRates.append(try gnuParallel(parallel)) }
            floorRates.append(try SpawnFloor.measure(program: "/bin/true", inputs: inputs, width: 2))
        }
        return rows(skynet: skynetRates, parallel: parallelRates, floor: floorRates, parallelSkipped: lookup.unavailableReason)
    }

    /// The rows of W8; the ratios are taken run by run (each run measured all three in turn).
    private func rows(skynet: [Double], parallel: [Double], floor: [Double], parallelSkipped: String?) -> [Row] {
        let overFloor = zip(skynet, floor).map { $0 / $1 }, overParallel = zip(skynet, parallel).map { $0 / $1 }
        var parallelRow = Row(workload: "W8", measure: "GNU parallel -j12 true", unit: "tasks/s", values: parallel)
        parallelRow.skipped = parallelSkipped
        let rows = [
            Row(workload: "W8", measure: "2000 x /bin/true, ours", unit: "tasks/s", values: skynet,
                target: parallel.isEmpty ? ">= 0.6x floor (no GNU parallel)" : ">= 5x parallel, >= 0.6x floor",
                met: median(overFloor) >= 0.6 && (parallel.isEmpty || median(overParallel) >= 5)),
            parallelRow,
            Row(workload: "W8", measure: "spawn floor, 2 at a time", unit: "tasks/s", values: floor),
            Row(workload: "W8", measure: "ours / floor", unit: "ratio", values: overFloor, ideal: "1.000", target: ">= 0.6",
                met: median(overFloor) >= 0.6),
        ]
        return parallel.isEmpty ? rows
            : rows + [Row(workload: "W8", measure: "ours / GNU parallel", unit: "ratio", values: overParallel, target: ">= 5", met: median(overParallel) >= 5)]
    }
}
