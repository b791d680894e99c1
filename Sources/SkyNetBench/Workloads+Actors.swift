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
        journal = path.flatMap(Self.openJournal)
    }

    /// The journal at `path` when it is one A4 names (`N.log` in a `skynet-bench-a4-…` folder
    /// of the temporary directory) and a regular file; nil for anything else. A spawn's
    /// arguments come from whoever reaches the node: no other file is made or written, and
    /// nothing that could block the pool (a FIFO) is opened for long.
    static func openJournal(_ path: String) -> Int32? {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent()
        guard url.lastPathComponent.hasSuffix(".log"), folder.lastPathComponent.hasPrefix("skynet-bench-a4-"),
              folder.deletingLastPathComponent().standardizedFileURL.path == FileManager.default.temporaryDirectory.standardizedFileURL.path
        else { return nil }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return nil
        }
        return descriptor
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
    /// awaited by its own task; each link keeps 256 in flight and the rest wait their turn, as
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

extension Workloads {
    /// A4: 10,000 calls over 3 nodes, 100 in flight, a node killed (SIGKILL) as call 5,000 is
    /// made: every call ends (none waits out its deadline), each failure is known within a
    /// second of the kill, no call runs twice (each node's actor journals the calls it runs, in
    /// a file that outlives the kill), and an actor with a restart policy answers again.
    func actorFailover() throws -> [Row] {
        var hangs: [Double] = [], surfaced: [Double] = [], duplicates: [Double] = [], failed: [Double] = [], restarted: [Double] = []
        for _ in 0..<runs {
            let run = try blocking { [self] in try await failoverRun() }
            hangs.append(Double(run.hangs))
            surfaced.append(run.slowestFailure * 1000)
            duplicates.append(Double(run.duplicates))
            failed.append(Double(run.failed))
            restarted.append(run.restartedAfter * 1000)
        }
        return [
            Row(workload: "A4", measure: "calls that hung", unit: "calls", values: hangs, target: "0", met: hangs.allSatisfy { $0 == 0 }),
            Row(workload: "A4", measure: "slowest failure after the kill", unit: "ms", values: surfaced, target: "<= 1000",
                met: surfaced.allSatisfy { $0 <= 1000 }),
            Row(workload: "A4", measure: "calls run twice", unit: "calls", values: duplicates, target: "0", met: duplicates.allSatisfy { $0 == 0 }),
            Row(workload: "A4", measure: "calls that failed", unit: "calls", values: failed),
            Row(workload: "A4", measure: "restarted actor answers after", unit: "ms", values: restarted, target: "<= 2000",
                met: restarted.allSatisfy { $0 <= 2000 }),
        ]
    }

    struct FailoverRun: Sendable {
        var hangs = 0, failed = 0, duplicates = 0
        var slowestFailure = 0.0, restartedAfter = Double.infinity
    }

    private func failoverRun() async throws -> FailoverRun {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-bench-a4-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let cluster = try await ActorCluster.start(actors: BenchEcho.registry, options: Self.actorOptions(spawn: 3))
        do {
            let run = try await failover(cluster, journals: folder)
            await cluster.stop()
            return run
        } catch {
            await cluster.stop()
            throw error
        }
    }

    private func failover(_ cluster: ActorCluster, journals folder: URL) async throws -> FailoverRun {
        let system = cluster.system, nodes = system.nodes
        var spawned: [BenchEcho] = []
        for (index, node) in nodes.enumerated() {
            spawned.append(try await system.spawn(BenchEcho.self, with: folder.appendingPathComponent("\(index).log").path, on: .node(node)))
        }
        let actors = spawned
        let victim = try requireNode(cluster.nodes.first { $0.name == nodes[1] })
        let survivor = try await system.spawn(BenchEcho.self, with: "", on: .node(nodes[1]), restart: .onNodeLoss)
        let total = 10_000, inFlight = 100, killAt = 5_000
        let killed = Locked<ContinuousClock.Instant?>(nil)
        let outcome = Locked(FailoverRun())
        try await ClusterActorSystem.withCallOptions(CallOptions(timeout: .seconds(30))) {
            try await withThrowingDiscardingTaskGroup { group in
                for maker in 0..<inFlight {
                    group.addTask {
                        for call in stride(from: maker, to: total, by: inFlight) {
                            if call == killAt {
                                killed.withLock { $0 = .now }  // before the kill: its failures come after
                                victim.send(SIGKILL)
                            }
                            do {
                                _ = try await actors[call % actors.count].record(call)
                            } catch ClusterActorSystemError.deadline {
                                outcome.withLock { $0.hangs += 1 }
                            } catch {
                                let after = killed.withLock { $0 }.map { (ContinuousClock.now - $0).seconds } ?? .infinity
                                outcome.withLock { $0.failed += 1; $0.slowestFailure = max($0.slowestFailure, after) }
                            }
                        }
                    }
                }
            }
        }
        // The restartable actor, made again on a node still up, through its old reference.
        let kill = killed.withLock { $0 } ?? .now
        while (try? await survivor.noop(1)) == nil, ContinuousClock.now - kill < .seconds(10) {
            try await Task.sleep(for: .milliseconds(5))
        }
        var run = outcome.withLock { $0 }
        if (try? await survivor.noop(1)) != nil { run.restartedAfter = (ContinuousClock.now - kill).seconds }
        var seen: [Int: Int] = [:]
        for index in nodes.indices {
            let text = (try? String(contentsOf: folder.appendingPathComponent("\(index).log"), encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") { if let call = Int(line) { seen[call, default: 0] += 1 } }
        }
        run.duplicates = seen.values.filter { $0 > 1 }.count
        guard seen.count + run.failed + run.hangs >= total else {
            throw BenchError("A4: \(total - seen.count - run.failed - run.hangs) calls neither ran nor failed")
        }
        return run
    }
}

/// The node `node`, or a benchmark error saying it is missing.
private func requireNode(_ node: NodeProcess?) throws -> NodeProcess {
    guard let node else { throw BenchError("A4: the node to kill is not among the spawned ones") }
    return node
}
