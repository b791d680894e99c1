import Foundation
import SkyNet

extension ScanCommand {
    func run() async -> Int32 {
        let status = await runScan()
        await Console.flush()  // every queued line is out before the process exits
        return status
    }

    private func runScan() async -> Int32 {
        let signals = await TerminationSignals.install()
        Socket.ignoreBrokenPipes()
        for node in cluster.nodes where !(await Socket.resolves(host: node.host)) {
            await Console.printError("error: cluster file \(clusterPath ?? "cluster.json"): node \(node.name) has an unknown host \"\(node.host)\"")
            return 2
        }
        let output: ScanOutput
        let done: SectorSet
        do {
            (output, done) = try await openOutput()
        } catch {
            await Console.printError("error: \(error)")
            return 2
        }

        let local = LocalSystem(name: ClusterConfig.localName, capacity: localCapacity, api: UnreliableAPI(failingEvery: failingEvery))
        let systems = Systems()
        await systems.add(local, capacity: localCapacity)
        let spawned: [NodeProcess]
        do {
            spawned = try await spawnNodes()
        } catch {
            await output.error("\(error)")
            await output.close()
            return 1
        }
        // A second Ctrl-C exits at once: the nodes go with it (their parent pipe closes too).
        signals.beforeExit { for node in spawned { node.send(SIGKILL) } }
        let peers = ClusterConfig(
            nodes: cluster.nodes + spawned.map { .init(name: $0.name, host: $0.host, port: $0.port) },
            capacity: cluster.capacity)
        let links = PeerLinks(cluster: peers, systems: systems, settings: .init(
            capacity: capacity, timeout: .seconds(timeout), token: SkyNetCLI.token)) { await output.cluster($0) }

        // Made one at a time as slots free: a scan of millions starts at once.
        let tasks = (0..<total).lazy.filter { !done.contains($0) }.map { [duration] in ScanTask(input: $0, duration: duration) }
        let coordinator = Coordinator(systems: systems, maxAttempts: maxAttempts) { await output.scan($0) }
        let scan = Task { await coordinator.run(tasks, count: total - done.count) }

        // Ctrl-C or SIGTERM stops the scan; a second one exits at once.
        let stopSignal = signals.received
        let watcher = Task {
            _ = await stopSignal.value
            scan.cancel()
            await Console.printError((isatty(2) == 1 ? Progress.clear : "") + "Stopping: running tasks are cancelled (Ctrl-C again to quit at once)")
        }
        // A scan that only dispatches has nothing to run it once every peer refused it for good.
        let everyPeerRefused = links.everyPeerRefused
        let refusalWatcher = Task { [localCapacity] in
            guard localCapacity == 0 else { return }
            _ = await everyPeerRefused.value
            scan.cancel()
        }
        let report = await scan.value
        watcher.cancel()
        refusalWatcher.cancel()
        // Links stop first, so no peer event follows the summary; a link still connecting is
        // left to the process's exit rather than awaited (its connect may take --timeout).
        await links.stop()
        await output.finish(report, resumed: done.count)
        await withTaskGroup(of: Void.self) { group in
            for node in spawned { group.addTask { await node.stop() } }
        }
        if report.interrupted, let signal = stopSignal.current { return 128 + signal }
        if report.interrupted, localCapacity == 0, let refusal = everyPeerRefused.current {
            await output.error(refusal)
            return 2
        }
        withExtendedLifetime(signals) {}
        return report.gaveUp == 0 && !output.journalIncomplete ? 0 : 1
    }

    /// The output, journaling to --journal, and the sectors the journal holds when resuming:
    /// one bit per sector, read as a stream, so a journal of any length resumes in bounded memory.
    private func openOutput() async throws -> (ScanOutput, SectorSet) {
        let progress = { Progress.start(total: total, hasLocalSystem: localCapacity > 0, quiet: quiet) }
        guard let journalPath else {
            return (ScanOutput(format: format, journal: nil, progress: progress()), SectorSet(total: 0))
        }
        var resumed: (sectors: SectorSet, count: Int, skipped: Int)?
        if resume {
            if FileManager.default.fileExists(atPath: journalPath) {
                resumed = try await ScanJournal.readCompletedSectors(path: journalPath, total: total)
            } else {
                // A mistyped path would otherwise look like a resume that found nothing to skip.
                await Console.printError("no journal at \(journalPath): starting a new one")
            }
        }
        let output = ScanOutput(format: format, journal: try await ScanJournal.appending(to: journalPath), progress: progress())
        if let resumed { await output.resumed(resumed.count, from: journalPath, skipped: resumed.skipped) }
        return (output, resumed?.sectors ?? SectorSet(total: 0))
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
