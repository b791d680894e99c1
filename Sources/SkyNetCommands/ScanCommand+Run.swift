import SkyNetCluster
import SkyNetDashboard
import SkyNetJournal
import SkyNetMetrics
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransfer
import SkyNetTransport
import SkyNetWork

extension ScanCommand {
    func run() async -> Int32 {
        let status = await runScan()
        await Console.flush()  // every queued line is out before the process exits
        return status
    }

    /// The scan as a group of services started in order and stopped in reverse on every path:
    /// the output (progress line, journal), the dashboard, the spawned nodes and the peer
    /// links; the coordinator runs as the group's body. The exit status is read once every
    /// service has stopped.
    private func runScan() async -> Int32 {
        let signals = await TerminationSignals.install()
        defer { withExtendedLifetime(signals) {} }
        Socket.ignoreBrokenPipes()
        Console.writer.watchReader(of: 1)  // a reader that leaves stops the scan at once
        do throws(ScanExit) {
            return await (try await withServiceGroup { (group) throws(ScanExit) in try await scan(in: group, signals: signals) })()
        } catch {
            guard case .failed(let status) = error else {
                // Said once the services have stopped; nodes that did start exit with us.
                let signal = signals.received.current ?? SIGTERM
                await Console.printError("Stopped before the scan started (signal \(signal)).")
                return 128 + signal
            }
            return status
        }
    }

    /// Why a scan ends before it runs: a stop signal, or a failure already reported.
    enum ScanExit: Error {
        case stoppedBeforeStart
        case failed(Int32)
    }

    /// Starts the services, runs the scan and prints its summary; returns how to read the exit status.
    private func scan(in group: ServiceGroup, signals: TerminationSignals) async throws(ScanExit) -> () async -> Int32 {
        // An ssh host's name is ssh's to resolve (~/.ssh/config may alias it). An address
        // group's name may have no address yet (no node is ready): it is watched, not checked.
        for node in cluster.nodes where node.ssh == nil && !node.everyAddress {
            guard !(await Socket.resolves(host: node.host)) else { continue }
            await Console.printError("error: cluster file \(clusterPath ?? "cluster.json"): node \(node.name) has an unknown host \"\(node.host)\"".escapingControlCharacters)
            throw .failed(2)
        }
        let (inputs, output, done) = try await group.start { () throws(ScanExit) in
            // Reading the inputs and the journal may take seconds: a stop signal ends the wait.
            try await unlessStopped(signals, failure: { error in await Console.printError("error: \(error)".escapingControlCharacters); return 2 }) {
                [self] in try await openOutput()
            }
        } stop: { await $0.1.progress?.stop() }  // the progress line goes on every path out
        let count = inputs?.count ?? total
        if let inputs, inputs.count == 0, totalGiven != 0 {
            await Console.printError((inputs.name == "stdin" ? "no inputs on stdin" : "no inputs in \(inputs.name)").escapingControlCharacters)
        }
        let jobs = try await localJobs(output)
        // A job this process does not declare runs on the peers that do, never here.
        let localSlots = jobs.job(named: job) == nil ? 0 : localCapacity
        // This process's command jobs, and its ssh clients (their uploads read a file, not a
        // pipe that our death would close), die with it even when it is killed (SIGKILL).
        if localSlots > 0 && jobCommand != nil || cluster.nodes.contains(where: { $0.ssh != nil }) {
            await GroupKeeper.startFromThisExecutable()
        }
        let local = LocalSystem(name: ClusterConfig.localName, capacity: localSlots, jobs: jobs)
        // Returned files are written relative to the directory the scan started in, opened once.
        let roots = try await returnRoots(output)
        let systems = Systems()
        if let roots, let records = output.returnRecords {
            await systems.add(TransferringLocalSystem(wrapping: local, spec: transfer, records: records, roots: roots), capacity: localSlots)
        } else {
            await systems.add(local, capacity: localSlots)
        }
        // The dashboard's place comes before the nodes: it outlives them, so that the final
        // state it shows for --dashboard-linger has no node left running. It starts once the
        // nodes' addresses are known.
        let served = Locked<Dashboard?>(nil)
        await group.start {} stop: { await closeDashboard(served.withLock { $0 }, signals: signals) }
        let spawned = try await group.start { () throws(ScanExit) in
            try await unlessStopped(signals, failure: { error in await output.error("\(error)"); return 1 }) { [self] in try await spawnNodes() }
        } stop: { nodes in await withTaskGroup(of: Void.self) { group in for node in nodes { group.addTask { await node.stop() } } } }
        // A second Ctrl-C exits at once: this process's jobs are killed with it, and the nodes
        // are told to stop (their parent pipe closes too), so that they kill their own jobs.
        signals.beforeExit {
            ChildProcess.killEveryGroup()
            for node in spawned { node.send(SIGTERM) }
        }
        let peers = ClusterConfig(
            nodes: cluster.nodes + spawned.map { .init(name: $0.name, host: $0.host, port: $0.port) },
            capacity: cluster.capacity)
        // The dashboard lists from the start this process's own system, then every peer; an
        // address group has no row of its own, each member gets one when it is found.
        let board = dashboard == nil ? nil : ScanBoard(total: count - done.count, resumed: done.count, systems:
            [ScanBoard.System(name: ClusterConfig.localName, address: "this process", isLocal: true)]
                + peers.nodes.filter { !$0.everyAddress }.map { ScanBoard.System(name: $0.name, address: $0.address) })
        // `/metrics`: the coordinator's tasks, and its links' bytes once the links have started.
        let taskMetrics = board == nil ? nil : TaskMetrics(jobs: [job])
        let linked = Locked<PeerLinks?>(nil)
        let started = try await startDashboard(board: board, systems: systems, output: output) {
            (taskMetrics?.families() ?? []) + [ScanMetrics.bytes(linked.withLock { $0 }?.traffic)]
        }
        served.withLock { $0 = started }
        var settings = PeerLinks.Settings(capacity: capacity, timeout: .seconds(timeout), token: token?.value,
                                          job: job, jobSummary: jobs.job(named: job)?.summary, allowJobMismatch: allowJobMismatch)
        settings.ssh = sshSettings(output: output)
        if let roots, let records = output.returnRecords {
            (settings.transfer, settings.returnRecords, settings.returnRoots) = (transfer, records, roots)
        }
        let links = await group.start {
            PeerLinks(cluster: peers, systems: systems, settings: settings) { event in
                board?.record(event)
                await output.cluster(event)
            }
        } stop: { await $0.stop() }
        linked.withLock { $0 = links }
        // Hosts given to log in to are what the scan was asked to run on: when none of them
        // can be used and no other peer was given, the scan stops rather than run here alone.
        let sshOnly = peers.nodes.contains { $0.ssh != nil } && peers.nodes.allSatisfy { $0.ssh != nil }
        return await coordinate(inputs: inputs, done: done, localSlots: localSlots, systems: systems, output: output, board: board,
                                metrics: taskMetrics, links: links, sshOnly: sshOnly, group: group, signals: signals)
    }

    /// Runs the tasks (the group's body), stops the links, prints the summary; returns how to
    /// read the exit status once the other services have stopped too.
    private func coordinate(inputs: InputFile?, done: SectorSet, localSlots: Int, systems: Systems, output: ScanOutput,
                            board: ScanBoard?, metrics: TaskMetrics?, links: PeerLinks, sshOnly: Bool, group: ServiceGroup,
                            signals: TerminationSignals) async -> () async -> Int32 {
        let count = inputs?.count ?? total
        var coordinator = Coordinator(systems: systems, maxAttempts: maxAttempts) { event in
            board?.record(event)
            await output.scan(event)
        }
        coordinator.orderWindow = keepOrder ? Self.orderWindow : nil
        coordinator.maxResultBytes = maxOutput ?? CommandJob.defaultMaxOutput
        coordinator.metrics = metrics
        let feed = inputs.map { $0.feed { [job, duration, taskTimeout] sector, text in
            done.contains(sector) ? nil : ScanTask(input: sector, duration: duration, job: job, text: text, timeout: taskTimeout)
        } }
        // Above the links' `.medium` (`PeerLinks`): the peers already linked get tasks before
        // more links are set up.
        let scan = Task(priority: .high) { [coordinator, job, duration, taskTimeout, total] in
            if let feed { return await coordinator.run(feed: feed, count: count - done.count) }
            // Made one at a time as slots free: a scan of millions starts at once.
            let tasks = done.absent(below: total).lazy
                .map { ScanTask(input: $0, duration: duration, job: job, timeout: taskTimeout) }
            return await coordinator.run(tasks, count: total - done.count)
        }
        // A stdout that fails stops the scan as Ctrl-C does: what it would print is lost.
        output.stdoutFailed.whenFulfilled { _ in scan.cancel() }
        let stopSignal = signals.received
        // Set once the tasks are over: a signal after that (during --dashboard-linger) ends
        // the linger, and there is nothing to say about stopping tasks.
        let tasksOver = Locked(false)
        let watcher = Task {
            _ = await stopSignal.value
            guard !tasksOver.withLock({ $0 }) else { return }
            scan.cancel()
            await Console.printError(Progress.clearIfTerminal + "Stopping: running tasks are cancelled (Ctrl-C again to quit at once)")
        }
        // A scan that only dispatches has nothing to run it once every peer refused it for good.
        let everyPeerRefused = links.everyPeerRefused
        if localSlots == 0 { everyPeerRefused.whenFulfilled { _ in scan.cancel() } }
        let everySSHHostFailed = links.everySSHHostFailed
        if sshOnly { everySSHHostFailed.whenFulfilled { _ in scan.cancel() } }
        let report = await scan.value
        tasksOver.withLock { $0 = true }
        if let board {
            board.update(await systems.slotUse)  // the last picture of the slots, peers still in it
            board.freezeSlots()
        }
        watcher.cancel()
        // The links stop first, so no peer event follows the summary; a link still connecting
        // is left to the process's exit rather than awaited (its connect may take --timeout).
        await group.stopLast()
        // Why a scan that was not stopped by a signal still did not complete, said before `Finished`.
        let unstopped = report.interrupted && stopSignal.current == nil
        let sshFailure = unstopped && sshOnly ? everySSHHostFailed.current.map { "no ssh host could be used: \($0)" } : nil
        let refusal = sshFailure ?? (unstopped && localSlots == 0 ? everyPeerRefused.current : nil)
        let failure = feed?.failure.map { "\($0)" } ?? refusal
        let summary = await output.finish(report, resumed: done.count, failure: failure)
        board?.finish(report, summary: summary)
        return {
            if report.interrupted, let signal = stopSignal.current { return 128 + signal }
            if feed?.failure != nil { return await output.exitStatus(1) }
            if refusal != nil { return await output.exitStatus(2) }
            return await output.exitStatus(report.gaveUp == 0 && !output.journalIncomplete ? 0 : 1)
        }
    }

    /// Runs `body` unless a stop signal comes first, and then ends the scan at once: the
    /// process is about to exit, and what `body` was still doing on threads of its own goes
    /// with it. A `body` that throws ends it with the status `failure` gives once it said why.
    private func unlessStopped<T: Sendable>(
        _ signals: TerminationSignals, failure: (any Error) async -> Int32, _ body: @escaping @Sendable () async throws -> T
    ) async throws(ScanExit) -> T {
        let outcome = AsyncSignal<Result<T, any Error>?>()
        signals.received.whenFulfilled { _ in outcome.fulfil(nil) }
        Task {
            do { outcome.fulfil(.success(try await body())) } catch { outcome.fulfil(.failure(error)) }
        }
        switch await outcome.value {
        case nil: throw .stoppedBeforeStart
        case .success(let value)?: return value
        case .failure(let error)?: throw .failed(await failure(error))
        }
    }

    /// The output, journaling to --journal, and the sectors the journal holds when resuming:
    /// one bit per sector (and with --inputs a fingerprint of each one's input), read as a
    /// stream, so a journal of any length resumes in bounded memory. A journal written for
    /// other inputs is an error, never a silent skip. The journal is opened and locked first,
    /// so that no other scan writes it while this one reads and runs it; without --resume, one
    /// that holds anything is refused. With --results, a resume prints the journaled results
    /// the earlier run had not printed.
    private func openOutput() async throws -> (inputs: InputFile?, output: ScanOutput, done: SectorSet) {
        let inputs: InputFile? = if let inputsPath { try await InputFile.open(path: inputsPath, limit: totalGiven ?? .max) } else { nil }
        let count = inputs?.count ?? total
        let progress = { Progress.start(total: count, hasLocalSystem: localCapacity > 0 && (jobCommand != nil || job == JobRegistry.scan), quiet: quiet) }
        let existed = journalPath.map { FileManager.default.fileExists(atPath: $0) } ?? false
        let journal: ScanJournal? = if let journalPath { try await ScanJournal.appending(to: journalPath, continuing: resume) } else { nil }
        var resumed: ScanJournal.ResumePoint?
        var journaled: [ScanJournal.ResultPlace] = []
        if let journalPath, resume {
            if existed {
                let point = try await ScanJournal.readResumePoint(path: journalPath, total: count, inputsFile: inputs != nil, job: job,
                                                                  returns: transfer.isActive ? transfer : nil)
                if let message = point.filesMessage { await Console.printError(message) }
                if let inputs, !point.sectors.isEmpty { try await inputs.verify { point.fingerprint(of: $0) } }
                if results { journaled = try await ScanJournal.readResultPlaces(path: journalPath, sectors: point.unprinted) }
                resumed = point
            } else {
                // A mistyped path would otherwise look like a resume that found nothing to skip.
                await Console.printError("no journal at \(journalPath): starting a new one")
            }
        }
        let done = resumed?.sectors ?? SectorSet(total: 0)
        let order = results ? ResultOrder(keepsOrder: keepOrder, skipped: done, journaled: journaled) : nil
        let output = ScanOutput(format: format, journal: journal, progress: progress(), results: order,
                                returnRecords: transfer.isActive ? ReturnRecords() : nil)
        if let resumed, let journalPath { await output.resumed(resumed.count, from: journalPath, skipped: resumed.skipped) }
        await output.printResults(order?.start())  // what a resume found journaled and never printed
        return (inputs, output, done)
    }

    /// The directories returned files are written from (the scan's working directory, and `/`
    /// for absolute paths), when files travel; nil when they do not.
    private func returnRoots(_ output: ScanOutput) async throws(ScanExit) -> ReturnRoots? {
        guard transfer.isActive else { return nil }
        do {
            return try await onBlockingPool { try ReturnRoots.current() }
        } catch {
            await output.error("cannot open the working directory for the files that come back: \(error)")
            throw .failed(1)
        }
    }

    /// The jobs of this process's own system: the built-in scan, and the --job command if given.
    private func localJobs(_ output: ScanOutput) async throws(ScanExit) -> JobRegistry {
        var jobs = JobRegistry(api: UnreliableAPI(failingEvery: failingEvery))
        guard let jobCommand else { return jobs }
        do {
            try jobs.register(job, CommandJob(name: job, command: jobCommand, maxOutput: maxOutput ?? CommandJob.defaultMaxOutput))
        } catch {
            await output.error("\(error)")
            throw .failed(2)
        }
        return jobs
    }

    /// Starts the --spawn nodes in parallel; if one fails, stops the others.
    private func spawnNodes() async throws -> [NodeProcess] {
        try await NodeProcess.startAll(spawn, arguments: Self.optionTable.spawnedArguments(for: self))
    }
}
