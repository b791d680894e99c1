import Foundation
import SkyNet
import SkyNetOptions
import SkyNetTransport

/// `skynet-bench`: runs the workloads of BENCHMARKS.md against real `skynet` processes and
/// prints a table (median, min, max per measure) and a JSON file.
@main
enum SkyNetBench {
    /// Its options: parsing, usage and help come from this one table.
    static let optionTable = OptionTable<SkyNetBench>(options: [
        .init("runs", .count(1...100), usage: "[--runs 5]", "N",
              "measurements per measure, <range> (W7's and W10's long scans: N/2)"),
        .init("only", .text, usage: "[--only W1,W2,...]", "LIST",
              "the workloads to run, of \(workloadNames.joined(separator: " ")) (default: all)"),
        .init("out", .text, usage: "[--out bench-results.json]", "FILE", "where the JSON results go"),
        .init("dask-w2", .text, usage: "[--dask-w2 1091]", "R",
              "dask's W2 rate in tasks/s, from run_peers.sh in the same sitting, for W2's",
              "\">= 25x dask\" (default 1091, the last measured dask W2)"),
        .init("ray-a2", .text, usage: "[--ray-a2 3794]", "R",
              "Ray's A2 rate in calls/s, from bench_actors.py in the same sitting, for A2's",
              "\">= 10x Ray\" (default 3794, the last measured Ray A2)"),
        // Hidden: a smaller W10 while working on the benchmark itself (the rows name the
        // number used); BENCHMARKS.md figures are taken at the default.
        .init("w10-total", .count(1000...10_000_000), usage: nil),
    ], usagePrefix: "usage: skynet-bench", sections: [""], column: 16)
    static let usage = optionTable.usage + "\n" + optionTable.help
    static let workloadNames = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "W13", "W14",
                                "W15", "A1", "A2", "A3", "A4"]

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `skynet-bench node …`: a node of the bench's own actors, as the A workloads start it.
        if arguments.first == "node" || arguments.first == GroupKeeper.command {
            _ = try? blocking { await ClusterProgram.serveIfNode(actors: BenchEcho.registry) }
            exit(2)
        }
        if arguments.first == "node-host" { NodeHost.serve(Array(arguments.dropFirst())) }
        if arguments.first == "echo-server" {
            do { try PingPong.serve() } catch { note("echo-server: \(error)"); exit(1) }
            return
        }
        if arguments.first == "--help" || arguments.first == "-h" {
            print(usage)
            return
        }
        let args: Arguments, runs: Int, w10Total: Int
        do {
            args = try optionTable.parse(arguments)
            runs = try args.int("runs", default: 5)
            w10Total = try args.int("w10-total", default: 10_000_000)
        } catch {
            fail("\(error)")
        }
        let only = args.string("only").map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() }) }
        if let only {
            guard !only.isEmpty else { fail("--only needs workload names") }
            let unknown = only.subtracting(workloadNames)
            guard unknown.isEmpty else { fail("--only: no workload \(unknown.sorted().joined(separator: ", "))") }
        }
        let out = args.string("out") ?? "bench-results.json"
        let daskW2 = args.string("dask-w2").map { Double($0) ?? .nan } ?? 1091
        guard daskW2.isFinite, daskW2 > 0, daskW2 <= 10_000_000 else { fail("--dask-w2 takes tasks/s above 0") }
        let rayA2 = args.string("ray-a2").map { Double($0) ?? .nan } ?? 3794
        guard rayA2.isFinite, rayA2 > 0, rayA2 <= 10_000_000 else { fail("--ray-a2 takes calls/s above 0") }
        Socket.ignoreBrokenPipes()
        let interrupts = Children.killOnInterrupt()
        defer { withExtendedLifetime(interrupts) {} }
        let bench = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let skynet = bench.deletingLastPathComponent().appendingPathComponent("skynet")
        guard FileManager.default.isExecutableFile(atPath: skynet.path) else {
            fail("no skynet beside skynet-bench: run `swift build -c release` first")
        }
        let workloads = Workloads(skynet: skynet, bench: bench, runs: runs, daskW2: daskW2, rayA2: rayA2, w10Total: w10Total)
        let plan: [(Set<String>, () throws -> [Row])] = [
            (["W1", "W2", "W3"], workloads.dispatchOnly), (["W4"], workloads.injectedFailures),
            (["W5"], workloads.roundTrip), (["W6"], workloads.wide), (["W7"], workloads.footprint),
            (["W8"], workloads.commandJobs), (["W9"], workloads.scale), (["W10"], workloads.tenMillion),
            (["W11"], workloads.authenticationCost), (["W12"], workloads.dashboardCost),
            (["W13"], workloads.sshLinks), (["W14"], workloads.filesTravel), (["W15"], workloads.tenThousandNodes),
            (["A1", "A2", "A3"], workloads.actorCalls), (["A4"], workloads.actorFailover),
        ]
        var rows: [Row] = [], failed: [String] = []
        for (names, run) in plan where only.map({ !$0.isDisjoint(with: names) }) ?? true {
            note("running \(names.sorted().joined(separator: ", "))…")
            do {
                rows += try run().filter { only?.contains($0.workload) ?? true }
            } catch {
                failed.append("\(names.sorted().joined(separator: ", ")) failed: \(error)")
                note(failed[failed.count - 1])
            }
        }
        printTable(rows)
        do {
            try writeJSON(rows, failed: failed, runs: runs, to: out)
            print("wrote \(out)")
        } catch {
            fail("cannot write \(out): \(error)")
        }
        // The rows of the workloads that ran are kept, but a sitting with a failed workload
        // is not a complete one: a script running the bench must see that.
        if !failed.isEmpty {
            note("skynet-bench: \(failed.count) of the workloads run failed:\n" + failed.joined(separator: "\n"))
            exit(1)
        }
    }

    static func fail(_ message: String) -> Never {
        note("skynet-bench: \(message)\n\(usage)")
        exit(2)
    }
}
