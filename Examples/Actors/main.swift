// The book's SkyNet, with Swift's distributed actors: every node's ScanSystem is a
// `distributed actor`, a Systems registry holds them (this process's own first), a task group
// keeps four scans in flight per system, a TimeoutTask bounds every call, and a scan that
// failed is run again here. The nodes are this very program, started as `node` processes.
// Run: swift run skynet-example-actors            (2 nodes of its own; --spawn N for N)
import Foundation
import SkyNet

/// Scans sectors of the sky for one system; its API fails every 10th call, as the book's does.
distributed actor ScanSystem {
    typealias ActorSystem = ClusterActorSystem

    let name: String
    private var calls = 0

    init(name: String, actorSystem: ClusterActorSystem) {
        self.name = name
        self.actorSystem = actorSystem
    }

    distributed func scan(sector: Int) async throws -> String {
        calls += 1
        if calls % 10 == 0 { throw ScanFailure(message: "UnreliableAPI.action(failingEvery:) failed.") }
        try await Task.sleep(for: .seconds(1))
        return String(sector)
    }
}

struct ScanFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Races an operation against a timer: the first to finish wins, the other is cancelled.
struct TimeoutTask<Value: Sendable> {
    let seconds: Double
    let operation: @Sendable () async throws -> Value

    var value: Value {
        get async throws {
            try await withThrowingTaskGroup(of: Value.self) { group in
                group.addTask { try await operation() }
                group.addTask {
                    try await Task.sleep(for: .seconds(seconds))
                    throw ScanFailure(message: "The operation timed out.")
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw CancellationError() }
                return first
            }
        }
    }
}

/// The systems that scan, by name, this process's own first: each takes four scans at a time.
actor Systems {
    private(set) var all: [(name: String, system: ScanSystem)] = []
    func add(_ system: ScanSystem, named name: String) { all.append((name, system)) }
}

/// The sectors still to scan, handed out one at a time.
actor Sectors {
    private var next = 0
    let total: Int
    init(total: Int) { self.total = total }
    func take() -> Int? {
        guard next < total else { return nil }
        defer { next += 1 }
        return next
    }
}

/// Prints a line at once: a pipe reading the program sees each as it happens.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// Every process of the program declares the same actor types; a node started as
// `PROGRAM node …` serves them here and never returns.
var actors = ActorRegistry()
try actors.declare(ScanSystem.self, arguments: String.self) { name, system in ScanSystem(name: name, actorSystem: system) }
await ClusterProgram.serveIfNode(actors: actors)

/// Links to the nodes, scans the sectors over every system, prints the book's lines.
func scanTheSky(arguments: [String]) async throws {
    let options = try ActorCluster.Options(arguments: arguments.isEmpty ? ["--spawn", "2"] : arguments)
    let cluster = try await ActorCluster.start(actors: actors, options: options) { say($0) }
    do {
        try await scan(over: cluster)
        await cluster.stop()
    } catch {
        await cluster.stop()
        throw error
    }
}

/// Places a ScanSystem on every node, then scans 20 sectors: four at a time on each system,
/// each call bounded by a TimeoutTask, a failed scan run again here (at most 3 times in all).
func scan(over cluster: ActorCluster) async throws {
    let systems = Systems()
    let local = ScanSystem(name: "local", actorSystem: cluster.system)
    await systems.add(local, named: "local")
    for node in cluster.system.nodes {
        await systems.add(try await cluster.system.spawn(ScanSystem.self, with: node, on: .node(node)), named: node)
    }
    let started = ContinuousClock.now
    let sectors = Sectors(total: 20)
    /// Scans `sector` on `system`, and again here when that fails; whether it was scanned.
    @Sendable func scan(_ sector: Int, on system: ScanSystem, named name: String, attempt: Int = 1) async -> Bool {
        do {
            let result = try await TimeoutTask(seconds: 5) { try await system.scan(sector: sector) }.value
            say(name == "local" ? "Completed: \(result)" : "Completed: \(result) by \(name)")
            return true
        } catch {
            guard attempt < 3 else {
                say("Gave up on task: \(sector) after \(attempt) attempts. Failed with: \(error)")
                return false
            }
            say("Re-run task: \(sector). Failed with: \(error)")
            return await scan(sector, on: local, named: "local", attempt: attempt + 1)
        }
    }
    let completed = await withTaskGroup(of: Int.self) { group in
        for (name, system) in await systems.all {
            for _ in 0..<4 {
                group.addTask {
                    var done = 0
                    while let sector = await sectors.take() {
                        if await scan(sector, on: system, named: name) { done += 1 }
                    }
                    return done
                }
            }
        }
        return await group.reduce(0, +)
    }
    say("Done.")
    say("Finished \(completed) scans in \(String(format: "%.2f", (ContinuousClock.now - started) / .seconds(1))) seconds.")
}

do {
    try await scanTheSky(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
