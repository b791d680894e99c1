import Foundation
import SkyNet
import SkyNetCluster
import SkyNetCommands
import SkyNetRuntime

/// The actor the A workloads call: no-op and echo calls, and calls that leave a record of
/// themselves in a file (A4 counts the runs of each call there, even on a node killed mid-run).
distributed actor BenchEcho {
    typealias ActorSystem = ClusterActorSystem
    /// Where `record` appends the numbers of the calls it runs; nil: nowhere.
    private let journal: Int32?

    init(journal path: String?, actorSystem: ClusterActorSystem) {
        self.actorSystem = actorSystem
        journal = path.map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    deinit {
        if let journal { close(journal) }
    }

    distributed func noop(_ value: Int) -> Int { value }
    distributed func echo(_ blob: Data) -> Data { blob }

    /// Appends `call` to the journal (one write, whole lines: a kill cannot split one), then returns it.
    distributed func record(_ call: Int) -> Int {
        if let journal {
            let line = Array("\(call)\n".utf8)
            _ = line.withUnsafeBytes { write(journal, $0.baseAddress, $0.count) }
        }
        return call
    }
}

extension BenchEcho {
    /// The types the bench's nodes make: `skynet-bench node …` serves them.
    static var registry: ActorRegistry {
        var registry = ActorRegistry()
        // Declared once, by a literal the bench controls: it cannot be refused.
        try? registry.declare(BenchEcho.self, arguments: String.self) { journal, system in
            BenchEcho(journal: journal.isEmpty ? nil : journal, actorSystem: system)
        }
        return registry
    }
}

extension Workloads {
    /// A1–A3: calls of actors on nodes of this program (`skynet-bench node`, spawned as
    /// `ActorCluster` spawns them), measured as `bench_actors.py` measures Ray's and dask's.
    func actorCalls() throws -> [Row] {
        try blocking { [self] in
            let cluster = try await ActorCluster.start(actors: BenchEcho.registry, options: Self.actorOptions(spawn: 3))
            do {
                let rows = try await actorRows(cluster)
                await cluster.stop()
                return rows
            } catch {
                await cluster.stop()
                throw error
            }
        }
    }

    static func actorOptions(spawn: Int) -> ActorCluster.Options {
        var options = ActorCluster.Options()
        options.spawn = spawn
        return options
    }

    private func actorRows(_ cluster: ActorCluster) async throws -> [Row] {
        let system = cluster.system
        var actors: [BenchEcho] = []
        for index in 0..<4 { actors.append(try await system.spawn(BenchEcho.self, with: "", on: .node(system.nodes[index % 3]))) }
        let payload = Data(repeating: UInt8(ascii: "x"), count: 1024)
        var a1p50: [Double] = [], a1p99: [Double] = [], raw: [Double] = [], a2: [Double] = [], a3: [Double] = []
        for _ in 0..<runs {
            for value in 0..<200 { _ = try await actors[0].noop(value) }
            let clock = ContinuousClock()
            var samples: [Double] = []
            for value in 0..<2000 {
                let start = clock.now
                _ = try await actors[0].noop(value)
                samples.append((clock.now - start).seconds * 1e6)
            }
            a1p50.append(percentile(samples, 50))
            a1p99.append(percentile(samples, 99))
            raw.append(percentile(try await onOwnThread(named: "bench-pingpong") { try PingPong.measure(bench: bench, rounds: 2000) }, 50))
            a2.append(try await callsPerSecond(20_000, actors) { try await $0.noop($1) == $1 })
            a3.append(try await callsPerSecond(20_000, actors) { actor, _ in try await actor.echo(payload) == payload })
        }
        let a1Limit = 1.5 * median(raw)
        return [
            Row(workload: "A1", measure: "call round trip p50", unit: "µs", values: a1p50, ideal: String(format: "%.1f (raw)", median(raw)),
                target: String(format: "<= %.1f (1.5x raw)", a1Limit), met: median(a1p50) <= a1Limit),
            Row(workload: "A1", measure: "call round trip p99", unit: "µs", values: a1p99),
            Row(workload: "A1", measure: "raw ping-pong p50", unit: "µs", values: raw),
            Row(workload: "A2", measure: "20000 no-op calls, 4 actors", unit: "calls/s", values: a2,
                target: ">= 40000 and >= 10x Ray (\(Int(10 * rayA2)))", met: median(a2) >= max(40_000, 10 * rayA2)),
            Row(workload: "A3", measure: "20000 x 1 KiB echo calls", unit: "calls/s", values: a3),
        ]
    }

    /// `count` calls, round-robin over `actors`, made by 1,000 tasks at once (each call is
    /// awaited by its own task; each link keeps 64 in flight and the rest wait their turn, as
    /// if all were made at once); each must check out. Not one task per call: the runtime
    /// removes a finished child from a list of all the group's, which for 20,000 costs more
    /// than the calls.
    private func callsPerSecond(_ count: Int, _ actors: [BenchEcho],
                                _ call: @escaping @Sendable (BenchEcho, Int) async throws -> Bool) async throws -> Double {
        let start = ContinuousClock.now
        let checked = Locked(0)
        let makers = 1000
        try await withThrowingDiscardingTaskGroup { group in
            for maker in 0..<makers {
                group.addTask {
                    for index in stride(from: maker, to: count, by: makers) where try await call(actors[index % actors.count], index) {
                        checked.withLock { $0 += 1 }
                    }
                }
            }
        }
        let good = checked.withLock { $0 }
        guard good == count else { throw BenchError("\(count - good) of \(count) calls came back wrong") }
        return Double(count) / (ContinuousClock.now - start).seconds
    }
}
