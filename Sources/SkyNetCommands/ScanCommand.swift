import SkyNetCluster
import SkyNetOptions
import SkyNetRuntime
import SkyNetWork

/// `skynet scan`: runs a scan from this process over its local system and the cluster's peers.
struct ScanCommand: Command {
    static let name = "scan"
    static let summary = "run a scan: this process's local system first, then the cluster's peers"
    static let usage = optionTable.usage
    static let help = """
        Run a scan of `total` sectors. Each task goes to the first system with a free slot: this
        process's own system first, then the peers of the cluster file. A failed task runs again
        on the local system, up to --max-attempts tries in all.

        \(usage)

        \(optionTable.help)

        Peers that are down are reported and skipped, and join when they come up; a peer whose
        request timed out gets no new work until it answers a ping. With a token (SKYNET_TOKEN in
        the environment, or --token-file FILE, owner-readable only, at least 16 bytes), every peer
        must prove it knows it before it gets a task (a peer that cannot is reported
        `Unauthorized`), the token itself is never sent, and every link is encrypted.

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
          skynet scan --total 2000 --duration 0.05 --spawn 3 --dashboard 8080 --dashboard-linger 60
          ls *.jpg > files.txt; skynet scan --spawn 2 --job sum='sha256sum {}' --inputs files.txt --results
          skynet scan --ssh 8/alice@gpu1,gpu2 --job sum='sha256sum {}' --inputs files.txt --results
          ls photos/*.jpg > todo.txt; skynet scan --ssh gpu1,gpu2 --job png='convert {} {.}.png' --inputs todo.txt --trc {.}.png
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
    let dashboard: ListenAddress?
    let dashboardLinger: Double
    /// Use peers whose command for the job differs from this scan's, after a warning.
    let allowJobMismatch: Bool
    /// The hosts of --ssh and --ssh-file (also in `cluster`), and how they are reached.
    let ssh: SSHOptions
    /// What the tasks' files do: inactive unless a file option was given.
    let transfer: TransferSpec
    /// --max-file-size as given, for the nodes this scan starts.
    let maxFileSizeGiven: Int?

    init(arguments: [String]) throws(UsageError) {
        let args = try Self.optionTable.parse(arguments)
        token = try ClusterToken.load(args)
        dashboard = try args.string("dashboard").map { (text) throws(UsageError) in try ListenAddress.parse(text, option: "dashboard") }
        dashboardLinger = try args.double("dashboard-linger")
        if dashboard == nil, args.string("dashboard-linger") != nil {
            throw UsageError("--dashboard-linger keeps the dashboard of --dashboard: give --dashboard too")
        }
        total = try args.int("total")
        totalGiven = args.string("total") == nil ? nil : total
        (job, jobCommand) = try Self.parseJob(args.string("job"))
        inputsPath = args.string("inputs")
        if inputsPath?.isEmpty == true { throw UsageError("option '--inputs' wants a file name, or - for stdin") }
        results = args.flag("results")
        keepOrder = args.flag("keep-order")
        allowJobMismatch = args.flag("allow-job-mismatch")
        taskTimeout = try args.optionalDouble("task-timeout")
        // Given to spawned nodes only when set here, so their command line stays as it was.
        maxOutput = args.string("max-output") == nil ? nil
            : try args.bytes("max-output")
        if keepOrder && !results { throw UsageError("--keep-order orders the results of --results: give --results too") }
        if results && args.flag("json") {
            throw UsageError("--results and --json both want stdout: choose one (the JSON events carry each result)")
        }
        duration = try args.double("duration")
        capacity = try args.int("capacity")
        localCapacity = try args.int("local-capacity", default: capacity)
        failingEvery = try args.int("failing-every")
        maxAttempts = try args.int("max-attempts")
        spawn = try args.int("spawn")
        ssh = try Self.parseSSH(args)
        var transfer = try Self.parseTransfer(args, job: job, inputsPath: inputsPath)
        // Only the journal and --json's `completed` events show a returned file's SHA-256.
        transfer.keepsDigests = args.string("journal") != nil || args.flag("json")
        self.transfer = transfer
        maxFileSizeGiven = args.string("max-file-size") == nil ? nil : Int(transfer.maxFileSize)
        // With --spawn or ssh hosts and no --cluster, only those are peers.
        let ownPeers = spawn > 0 || !ssh.nodes.isEmpty
        clusterPath = ownPeers && args.string("cluster") == nil ? nil : args.string("cluster") ?? "cluster.json"
        let file = clusterPath == nil ? ClusterConfig() : try Self.loadCluster(named: args.string("cluster"))
        let fileNames = Set(file.nodes.map(\.name))
        if let clash = ssh.nodes.first(where: { fileNames.contains($0.name) }) {
            throw UsageError("the ssh host \(clash.name) has the name of a node of the cluster file; give it once")
        }
        cluster = ClusterConfig(nodes: file.nodes + ssh.nodes, capacity: file.capacity, timeout: file.timeout)
        let givenTimeout = try args.optionalDouble("timeout")
        timeout = givenTimeout ?? cluster.timeout ?? 5
        journalPath = args.string("journal")
        resume = args.flag("resume")
        format = args.flag("json") ? .json : .text
        quiet = args.flag("quiet")
        if resume && journalPath == nil { throw UsageError("--resume needs --journal FILE") }
        // An ssh host without N/ has as many slots as cores: at least one.
        let peerSlots = cluster.nodes.reduce(spawn * capacity) { $0 + ($1.capacity ?? ($1.ssh != nil ? 1 : cluster.capacity ?? capacity)) }
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
        let spawnedNames = Set((0..<spawn).map { NodeProcess.spawnedName($0 + 1) })
        if let clash = cluster.nodes.first(where: { spawnedNames.contains($0.name) }) {
            throw UsageError("the cluster file's node \"\(clash.name)\" has the name of a spawned node; rename it")
        }
        try checkSSH(args)
    }

    /// `NAME` or `NAME=COMMAND` of --job (checked as `skynet node --job` checks it); the
    /// built-in scan when not given.
    static func parseJob(_ value: String?) throws(UsageError) -> (String, CommandTemplate?) {
        guard let value else { return (JobRegistry.scan, nil) }
        if value.contains("=") { return try JobDeclarations.parse(value) }
        try JobDeclarations.checked(value) { try JobRegistry.validate(value) }
        return (value, nil)
    }

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
