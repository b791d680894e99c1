import Foundation
import SkyNet

/// `skynet-bench`: runs the workloads of BENCHMARKS.md against real `skynet` processes and
/// prints a table (median, min, max per measure) and a JSON file.
@main
enum SkyNetBench {
    static let usage = "usage: skynet-bench [--runs 5] [--only W1,W2,...] [--out bench-results.json]"

    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "echo-server" {
            do { try PingPong.serve() } catch { note("echo-server: \(error)"); exit(1) }
            return
        }
        var runs = 5, only: Set<String>? = nil, out = "bench-results.json"
        while !arguments.isEmpty {
            let flag = arguments.removeFirst()
            guard let value = arguments.first else { fail("\(flag) needs a value") }
            arguments.removeFirst()
            switch flag {
            case "--runs": guard let n = Int(value), (1...100).contains(n) else { fail("--runs takes 1...100") }; runs = n
            case "--only": only = Set(value.split(separator: ",").map { $0.uppercased() })
            case "--out": out = value
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
        let workloads = Workloads(skynet: skynet, bench: bench, runs: runs)
        let plan: [(Set<String>, () throws -> [Row])] = [
            (["W1", "W2", "W3"], workloads.dispatchOnly), (["W4"], workloads.injectedFailures),
            (["W5"], workloads.roundTrip), (["W6"], workloads.wide), (["W7"], workloads.footprint),
            (["W8"], workloads.commandJobs), (["W11"], workloads.authenticationCost), (["W12"], workloads.dashboardCost),
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
