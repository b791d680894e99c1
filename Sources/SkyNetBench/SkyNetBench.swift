import Foundation
import SkyNet

/// `skynet-bench`: runs the workloads of BENCHMARKS.md against real `skynet` processes and
/// prints a table (median, min, max per measure) and a JSON file.
@main
enum SkyNetBench {
    static let usage = """
        usage: skynet-bench [--runs 5] [--only W1,W2,...] [--out bench-results.json] [--dask-w2 1091]
          --runs N        measurements per measure, 1...100 (W7's and W10's long scans: N/2)
          --only LIST     the workloads to run, of W1 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11 W12 (default: all)
          --out FILE      where the JSON results go
          --dask-w2 R     dask's W2 rate in tasks/s, from run_peers.sh in the same sitting, for W2's
                          ">= 25x dask" (default 1091, the last measured dask W2)
        """
    static let workloadNames = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12"]

    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "echo-server" {
            do { try PingPong.serve() } catch { note("echo-server: \(error)"); exit(1) }
            return
        }
        if arguments.first == "--help" || arguments.first == "-h" {
            print(usage)
            return
        }
        var runs = 5, only: Set<String>? = nil, out = "bench-results.json", daskW2 = 1091.0, w10Total = 10_000_000
        while !arguments.isEmpty {
            let flag = arguments.removeFirst()
            guard let value = arguments.first else { fail("\(flag) needs a value") }
            arguments.removeFirst()
            switch flag {
            case "--runs": guard let n = Int(value), (1...100).contains(n) else { fail("--runs takes 1...100") }; runs = n
            case "--only":
                let names = Set(value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() })
                let unknown = names.subtracting(workloadNames)
                guard !names.isEmpty else { fail("--only needs workload names") }
                guard unknown.isEmpty else { fail("--only: no workload \(unknown.sorted().joined(separator: ", "))") }
                only = names
            case "--out": out = value
            case "--dask-w2":
                guard let rate = Double(value), rate.isFinite, rate > 0, rate <= 10_000_000 else { fail("--dask-w2 takes tasks/s above 0") }
                daskW2 = rate
            // Not in the usage: a smaller W10 while working on the benchmark itself (the rows
            // name the number used); BENCHMARKS.md figures are taken at the default.
            case "--w10-total":
                guard let n = Int(value), (1000...10_000_000).contains(n) else { fail("--w10-total takes 1000...10000000") }
                w10Total = n
            default: fail("unknown option \(flag)")
            }
        }
        Socket.ignoreBrokenPipes()
        let interrupts = Children.killOnInterrupt()
        defer { withExtendedLifetime(interrupts) {} }
        let bench = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let skynet = bench.deletingLastPathComponent().appendingPathComponent("skynet")
        guard FileManager.default.isExecutableFile(atPath: skynet.path) else {
            fail("no skynet beside skynet-bench: run `swift build -c release` first")
        }
        let workloads = Workloads(skynet: skynet, bench: bench, runs: runs, daskW2: daskW2, w10Total: w10Total)
        let plan: [(Set<String>, () throws -> [Row])] = [
            (["W1", "W2", "W3"], workloads.dispatchOnly), (["W4"], workloads.injectedFailures),
            (["W5"], workloads.roundTrip), (["W6"], workloads.wide), (["W7"], workloads.footprint),
            (["W8"], workloads.commandJobs), (["W9"], workloads.scale), (["W10"], workloads.tenMillion),
            (["W11"], workloads.authenticationCost), (["W12"], workloads.dashboardCost),
        ]
        var rows: [Row] = []
        for (names, run) in plan where only.map({ !$0.isDisjoint(with: names) }) ?? true {
            note("running \(names.sorted().joined(separator: ", "))…")
            do {
                rows += try run().filter { only?.contains($0.workload) ?? true }
            } catch {
                note("\(names.sorted().joined(separator: ", ")) failed: \(error)")
            }
        }
        printTable(rows)
        do {
            try writeJSON(rows, runs: runs, to: out)
            print("wrote \(out)")
        } catch {
            fail("cannot write \(out): \(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        note("skynet-bench: \(message)\n\(usage)")
        exit(2)
    }
}
