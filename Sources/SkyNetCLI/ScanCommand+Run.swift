import Foundation
import SkyNet

extension ScanCommand {
    func run() async -> Int32 {
        let signals = await TerminationSignals.install()
        Socket.ignoreBrokenPipes()
        for node in cluster.nodes where !(await Socket.resolves(host: node.host)) {
            Console.err("error: cluster file \(clusterPath ?? "cluster.json"): node \(node.name) has an unknown host \"\(node.host)\"")
            return 2
        }
        let journal: ScanJournal?
        let done: [Int: String]
        do {
            (journal, done) = try openJournal()
        } catch {
            Console.err("error: \(error)")
            return 2
        }

        let local = LocalSystem(name: ClusterConfig.localName, capacity: localCapacity, api: UnreliableAPI(failingEvery: failingEvery))
        let systems = Systems()
        await systems.add(local, capacity: localCapacity)
        let spawned: [NodeProcess]
        do {
            spawned = try await spawnNodes()
        } catch {
            Console.err("error: \(error)")
            return 1
        }
        let peers = ClusterConfig(
            nodes: cluster.nodes + spawned.map { .init(name: $0.name, host: $0.host, port: $0.port) },
            capacity: cluster.capacity)
        let links = PeerLinks(cluster: peers, systems: systems, settings: .init(
            capacity: capacity, timeout: .seconds(timeout), token: token)) { Console.out($0) }

        let printer = ScanPrinter(journal: journal)
        let tasks = (0..<total).filter { done[$0] == nil }.map { ScanTask(input: $0, duration: duration) }
        let coordinator = Coordinator(systems: systems, maxAttempts: maxAttempts) { printer.print($0) }
        let scan = Task { await coordinator.run(tasks) }
        // Ctrl-C or SIGTERM stops the scan; a second one exits at once.
        let stopSignal = signals.received
        let watcher = Task {
            _ = await stopSignal.value
            scan.cancel()
        }
        let report = await scan.value
        watcher.cancel()
        printer.finish(report, resumed: done.count)

        await links.stop()
        await withTaskGroup(of: Void.self) { group in
            for node in spawned { group.addTask { await node.stop() } }
        }
        if let signal = stopSignal.current { return 128 + signal }
        withExtendedLifetime(signals) {}
        return report.gaveUp.isEmpty && !printer.journalFailed ? 0 : 1
    }

    /// The journal to append to, and the sectors it already holds when resuming.
    private func openJournal() throws -> (ScanJournal?, [Int: String]) {
        guard let journalPath else { return (nil, [:]) }
        var done: [Int: String] = [:]
        if resume {
            let (entries, skipped) = try ScanJournal.read(path: journalPath)
            for entry in entries where (0..<total).contains(entry.input) { done[entry.input] = entry.result }
            Console.out("Resumed: \(done.count) sectors from \(journalPath)"
                        + (skipped > 0 ? " (\(skipped) unreadable lines skipped)" : ""))
        }
        return (try ScanJournal(path: journalPath), done)
    }

    /// The token for peers, from the environment (never from a file or an argument).
    private var token: String? {
        ProcessInfo.processInfo.environment["SKYNET_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts the --spawn nodes in parallel; if one fails, stops the others.
    private func spawnNodes() async throws -> [NodeProcess] {
        guard spawn > 0 else { return [] }
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let arguments = ["--capacity", String(max(1, capacity)), "--failing-every", String(failingEvery)]
        return try await withThrowingTaskGroup(of: NodeProcess.self) { group in
            for index in 1...spawn {
                group.addTask {
                    try await NodeProcess.start(executable: executable, name: Self.spawnedName(index), arguments: arguments)
                }
            }
            var nodes: [NodeProcess] = []
            do {
                for try await node in group { nodes.append(node) }
            } catch {
                for node in nodes { await node.stop() }
                throw error
            }
            return nodes.sorted { $0.name.localizedStandardCompare($1.name) == .orderedAscending }
        }
    }
}
