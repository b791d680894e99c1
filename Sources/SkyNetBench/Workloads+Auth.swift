import Foundation
import SkyNet
import SkyNetCluster
import SkyNetRuntime

extension Workloads {
    /// W11: what authentication costs. W2 (2,000 no-op tasks, 3 nodes × 4, dispatch-only) and
    /// W5 (remote no-op round trip) with a token against without, runs interleaved in one
    /// sitting so that drift hits both alike. Target: at most 10 % slower with the token.
    func authenticationCost() throws -> [Row] {
        let token = Secrets.hex(Secrets.randomBytes(32))
        var plainEnvironment = ProcessInfo.processInfo.environment
        plainEnvironment["SKYNET_TOKEN"] = nil
        let tokenEnvironment = plainEnvironment.merging(["SKYNET_TOKEN": token]) { $1 }
        let plain = try BenchCluster(skynet: skynet, count: 3, environment: plainEnvironment)
        defer { plain.stop() }
        let signed = try BenchCluster(skynet: skynet, count: 3, environment: tokenEnvironment)
        defer { signed.stop() }

        func throughput(_ cluster: BenchCluster, _ environment: [String: String]) throws -> Double {
            let run = try ScanRun.run(skynet, ["--cluster", cluster.file, "--total", "2000", "--duration", "0",
                                               "--local-capacity", "0", "--failing-every", "0"], environment: environment)
            guard run.completed == 2000 else { throw BenchError("\(run.completed)/2000 completed") }
            return 2000 / run.seconds
        }
        func roundTripP50(_ node: NodeProcess, token: String?) throws -> Double {
            percentile(try roundTrips(to: node, token: token, rounds: 20_000), 50)
        }

        _ = try throughput(plain, plainEnvironment)  // warm-up
        _ = try throughput(signed, tokenEnvironment)
        var w2Plain: [Double] = [], w2Token: [Double] = [], w5Plain: [Double] = [], w5Token: [Double] = []
        for _ in 0..<runs {
            w2Plain.append(try throughput(plain, plainEnvironment))
            w2Token.append(try throughput(signed, tokenEnvironment))
            w5Plain.append(try roundTripP50(plain.nodes[0], token: nil))
            w5Token.append(try roundTripP50(signed.nodes[0], token: token))
        }
        let w2Floor = 0.9 * median(w2Plain), w5Ceiling = 1.1 * median(w5Plain)
        var w2 = Row(workload: "W11", measure: "W2 with token", unit: "tasks/s", values: w2Token,
                     ideal: String(format: "%.0f (no token)", median(w2Plain)), target: String(format: ">= %.0f (-10%%)", w2Floor),
                     met: median(w2Token) >= w2Floor)
        w2.note = String(format: "with token %.1f%% of without", 100 * median(w2Token) / median(w2Plain))
        var w5 = Row(workload: "W11", measure: "W5 p50 with token", unit: "µs", values: w5Token,
                     ideal: String(format: "%.1f (no token)", median(w5Plain)), target: String(format: "<= %.1f (+10%%)", w5Ceiling),
                     met: median(w5Token) <= w5Ceiling)
        w5.note = String(format: "with token %.1f%% of without", 100 * median(w5Token) / median(w5Plain))
        return [
            w2,
            Row(workload: "W11", measure: "W2 without token", unit: "tasks/s", values: w2Plain),
            w5,
            Row(workload: "W11", measure: "W5 p50 without token", unit: "µs", values: w5Plain),
        ]
    }
}
