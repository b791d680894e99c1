#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SkyNet

/// `skynet scan`: runs a scan from this process over its local system and the cluster's peers.
struct ScanCommand: Command {
    static let name = "scan"
    static let summary = "run a scan: this process's local system first, then the cluster's peers"
    static let usage = """
        usage: skynet scan [--total 20] [--cluster FILE] [--spawn N] [--duration 1.0] [--timeout 5]
                           [--capacity 4] [--local-capacity N] [--failing-every 10] [--max-attempts 5]
                           [--journal FILE [--resume]] [--json] [--quiet] [--token-file FILE]
                           [--job NAME[=COMMAND]] [--inputs FILE|-] [--results [--keep-order]]
                           [--task-timeout S] [--max-output BYTES] [--allow-job-mismatch]
                           [--dashboard [HOST:]PORT [--dashboard-linger S]]
        """
    static let help = """
        Run a scan of `total` sectors. Each task goes to the first system with a free slot: this
        process's own system first, then the peers of the cluster file. A failed task runs again
        on the local system, up to --max-attempts tries in all.

        \(usage)

        options:
          --total N            sectors to scan, 0...10000000 (default 20); with --inputs, run at
                               most the first N inputs (default: all of them)
          --cluster FILE       the static peer list (default ./cluster.json when it exists;
                               with --spawn, only the spawned nodes)
          --spawn N            start N local `skynet node` processes on free ports for this scan,
                               use them as peers and stop them afterwards, 0...64
          --duration S         seconds of simulated work per task, 0...3600 (default 1.0)
          --timeout S          seconds one remote request may take, longer than --duration
                               (default: the cluster file's, else 5)
          --capacity N         slots per system, 0...1024 (default 4)
          --local-capacity N   slots of this process's own system (default: --capacity);
                               0 only dispatches, and re-runs go to the first free system
          --failing-every N    the local system (and spawned nodes) fail every N-th task; 0 never
                               (default 10)
          --max-attempts N     tries per task before giving up, 1...100 (default 5)
          --journal FILE       append a JSON line per completed sector to FILE as it completes
                               (locked while the scan runs; an existing one only with --resume)
          --resume             skip the sectors FILE already holds and run the rest; with
                               --results, first print the results FILE holds and never printed
          --json               print JSON Lines events instead of log lines (see README)
          --quiet              no live progress line (also: NO_COLOR set, or stderr not a terminal)
          --token-file FILE    the cluster's token, instead of SKYNET_TOKEN (chmod 600 FILE)
          --dashboard [HOST:]PORT
                               serve a live dashboard in the browser at http://HOST:PORT/
                               (HOST 127.0.0.1 unless given; PORT 0 picks a free one; with a
                               token the page asks for it)
          --dashboard-linger S keep serving the final state S seconds after the scan, 0...86400
                               (default 0)

        real work:
          --job NAME           run the job NAME on each input (default: scan, the built-in simulated
                               scan); only systems that declare it get its tasks
          --job NAME=COMMAND   also declare it for this process's own system and the --spawn nodes:
                               COMMAND is split into words like sh would, never run by a shell;
                               {} is the input, {#} the sector; no {}: the input is the last word
          --inputs FILE        one input per line, sector i is line i (0-based); - reads stdin;
                               a trailing \\r is dropped; each line valid UTF-8, at most 131008 bytes
                               (a pipe or device is copied aside first, up to 1 GiB)
          --results            print only each task's result to stdout, whole, as it completes;
                               the log lines go to stderr (not with --json)
          --keep-order         with --results: in input order (at most \(ScanCommand.orderWindow) tasks run ahead
                               of the oldest one not finished); a task that gave up prints an
                               empty line in its place
          --task-timeout S     each task's deadline once started: its work is stopped (a command's
                               whole process group) and the task fails and runs again
          --max-output BYTES   the most output one command may print, 1...512K (default 256K;
                               K = 1024, M = 1048576); more is a failure, never cut
          --allow-job-mismatch also use peers that run the job as another command (other words,
                               not just other quoting) than this scan's --job NAME=COMMAND (or
                               the first peer's), after a warning; without it they are not used

        Peers that are down are reported and skipped, and join when they come up; a peer whose
        request timed out gets no new work until it answers a ping. With a token (SKYNET_TOKEN in
        the environment, or --token-file FILE, owner-readable only, at least 16 bytes), every peer
        must prove it knows it before it gets a task (a peer that cannot is reported
        `Unauthorized`), the token itself is never sent, and every line is authenticated.

        Ctrl-C, SIGTERM or SIGHUP stops the scan: no new tasks, remote work cancelled, a summary
        of what completed and what did not, the journal intact; exit 130 (SIGINT), 143 (SIGTERM)
        or 129 (SIGHUP). A second Ctrl-C exits at once. This process's jobs die with it even
        when it is killed (SIGKILL).

        exit status: 0 every task completed, 1 some task used up its attempts (or stdout or the
        journal could not be written, or the inputs changed), 2 bad usage or a bad cluster file,
        130/143/129 stopped by a signal, 141 stdout's reader went away (the scan stops then).

        examples:
          skynet scan --total 20
          skynet scan --total 20 --spawn 2
          skynet scan --total 200 --cluster cluster.json --local-capacity 0
          skynet scan --total 1000 --journal scan.jsonl --resume
          skynet scan --total 100 --duration 0.1 --failing-every 0
          skynet scan --total 2000 --duration 0.05 --spawn 3 --dashboard 8080
          ls *.jpg > files.txt; skynet scan --spawn 2 --job sum='sha256sum {}' --inputs files.txt --results
        """

    /// With --keep-order: how far past the oldest unfinished sector a task may start, so at
    /// most this many results wait to be printed.
    static let orderWindow = 256

    let total: Int
    let duration: Double
    let capacity: Int
    let localCapacity: Int
    let failingEvery: Int
    let maxAttempts: Int
    let cluster: ClusterConfig
    let clusterPath: String?
    let spawn: Int
    let timeout: Double
    let journalPath: String?
    let resume: Bool
    let format: ScanOutput.Format
    let quiet: Bool
    /// The job the tasks run, and its command when this scan declares it.
    let job: String
    let jobCommand: CommandTemplate?
    let inputsPath: String?
    /// --total as given (with --inputs, a cap on the inputs run).
    let totalGiven: Int?
    let results: Bool
    let keepOrder: Bool
    let taskTimeout: Double?
    let maxOutput: Int?
    let token: ClusterToken?
    let dashboard: DashboardAddress?
    let dashboardLinger: Double
    /// Use peers whose command for the job differs from this scan's, after a warning.
    let allowJobMismatch: Bool

    init(arguments: [String]) throws(UsageError) {
        let args = try Arguments(arguments, options: [
            "total", "cluster", "spawn", "duration", "timeout", "capacity", "local-capacity", "failing-every",
            "max-attempts", "journal", "job", "inputs", "task-timeout", "max-output", "token-file",
            "dashboard", "dashboard-linger",
        ], flags: ["resume", "json", "quiet", "results", "keep-order", "allow-job-mismatch"])
        token = try ClusterToken.load(args)
        dashboard = try args.string("dashboard").map { (text) throws(UsageError) in try DashboardAddress.parse(text) }
        dashboardLinger = try args.double("dashboard-linger", default: 0, in: 0...86400)
        if dashboard == nil, args.string("dashboard-linger") != nil {
            throw UsageError("--dashboard-linger keeps the dashboard of --dashboard: give --dashboard too")
        }
        total = try args.int("total", default: 20, in: 0...10_000_000)
        totalGiven = args.string("total") == nil ? nil : total
        (job, jobCommand) = try Self.parseJob(args.string("job"))
        inputsPath = args.string("inputs")
        if inputsPath?.isEmpty == true { throw UsageError("option '--inputs' wants a file name, or - for stdin") }
        results = args.flag("results")
        keepOrder = args.flag("keep-order")
        allowJobMismatch = args.flag("allow-job-mismatch")
        taskTimeout = try args.optionalDouble("task-timeout", in: 0.001...ScanTask.maxTimeout)
        // Given to spawned nodes only when set here, so their command line stays as it was.
        maxOutput = args.string("max-output") == nil ? nil
            : try args.bytes("max-output", default: CommandJob.defaultMaxOutput, in: JobDeclarations.maxOutputRange)
        if keepOrder && !results { throw UsageError("--keep-order orders the results of --results: give --results too") }
        if results && args.flag("json") {
            throw UsageError("--results and --json both want stdout: choose one (the JSON events carry each result)")
        }
        duration = try args.double("duration", default: 1.0, in: 0...ScanTask.maxDuration)
        capacity = try args.int("capacity", default: 4, in: 0...ClusterConfig.maxCapacity)
        localCapacity = try args.int("local-capacity", default: capacity, in: 0...ClusterConfig.maxCapacity)
        failingEvery = try args.int("failing-every", default: 10, in: 0...1_000_000_000)
        maxAttempts = try args.int("max-attempts", default: 5, in: 1...100)
        spawn = try args.int("spawn", default: 0, in: 0...64)
        // With --spawn and no --cluster, only the spawned nodes are peers.
        clusterPath = spawn > 0 && args.string("cluster") == nil ? nil : args.string("cluster") ?? "cluster.json"
        cluster = spawn > 0 && args.string("cluster") == nil
            ? ClusterConfig() : try Self.loadCluster(named: args.string("cluster"))
        let givenTimeout = try args.optionalDouble("timeout", in: 0.001...3600)
        timeout = givenTimeout ?? cluster.timeout ?? 5
        journalPath = args.string("journal")
        resume = args.flag("resume")
        format = args.flag("json") ? .json : .text
        quiet = args.flag("quiet")
        if resume && journalPath == nil { throw UsageError("--resume needs --journal FILE") }
        let peerSlots = cluster.nodes.reduce(spawn * capacity) { $0 + ($1.capacity ?? cluster.capacity ?? capacity) }
        if localCapacity + peerSlots == 0 {
            throw UsageError("no system has a slot to run tasks: give --capacity, --local-capacity or the cluster's peers at least 1")
        }
        if jobCommand == nil, job != JobRegistry.scan, spawn == 0, cluster.nodes.isEmpty {
            throw UsageError("no system declares the job '\(job)': declare it here with --job \(job)=COMMAND, or give peers that declare it")
        }
        if job == JobRegistry.scan, spawn > 0 || !cluster.nodes.isEmpty, timeout <= duration {
            // Refused rather than warned about: a peer cannot answer before the task's duration
            // has passed, so every remote attempt would time out, a certain waste a warning
            // would scroll away above the scan's lines.
            let source = givenTimeout != nil ? "--timeout \(timeout.formatted)"
                : cluster.timeout != nil ? "the cluster file's timeout \(timeout.formatted)" : "the default --timeout 5"
            throw UsageError("\(source) is not longer than --duration \(duration.formatted): every remote task would time out; give --timeout above \(duration.formatted)")
        }
        let spawnedNames = Set((0..<spawn).map { Self.spawnedName($0 + 1) })
        if let clash = cluster.nodes.first(where: { spawnedNames.contains($0.name) }) {
            throw UsageError("the cluster file's node \"\(clash.name)\" has the name of a spawned node; rename it")
        }
    }

    /// `NAME` or `NAME=COMMAND` of --job (checked as `skynet node --job` checks it); the
    /// built-in scan when not given.
    static func parseJob(_ value: String?) throws(UsageError) -> (String, CommandTemplate?) {
        guard let value else { return (JobRegistry.scan, nil) }
        if value.contains("=") {
            let (name, command) = try JobDeclarations.parse(value)
            return (name, command)
        }
        do {
            try JobRegistry.validate(value)
        } catch {
            throw UsageError("option '--job \(value)': \(error)")
        }
        return (value, nil)
    }

    /// The name of the `index`-th spawned node (from 1).
    static func spawnedName(_ index: Int) -> String { "node\(index)" }

    /// The named cluster file; without a name ./cluster.json when it exists, else no peers.
    static func loadCluster(named path: String?) throws(UsageError) -> ClusterConfig {
        let defaultPath = "cluster.json"
        guard let path = path ?? (FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil) else {
            return ClusterConfig()
        }
        do {
            return try ClusterConfig.load(from: path)
        } catch {
            throw UsageError(error.description)
        }
    }
}
