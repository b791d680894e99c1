import SkyNetActors
import SkyNetCluster
import SkyNetNode
import SkyNetOptions
import SkyNetRuntime
import SkyNetTransport
import SkyNetWork

/// `skynet node`: serves scans to coordinators over JSON Lines on TCP.
struct NodeCommand: Command {
    static let name = "node"
    static let summary = "run a node that executes the tasks peers send it, with the jobs it declares"
    static let usage = optionTable.usage
    static let help = """
        Run a node: accept connections from coordinators and run the tasks they send, at most
        --capacity at a time over all connections. When it accepts connections it prints
        `listening on HOST:PORT` on stdout (the real port, for --port 0); logs go to stderr.
        A log never holds the node up: while stderr is not being read, log lines are dropped
        and counted, and a line says how many once it is read again.
        SIGINT, SIGTERM or SIGHUP drain the node: it takes no new tasks (`busy`), tells every
        coordinator (`draining`, which then sends it nothing more), lets running tasks finish
        for up to --drain-timeout seconds, then cancels the rest (their coordinators run them
        elsewhere at once) and stops their jobs (SIGTERM, SIGKILL 2 s later, every job's whole
        process group), and exits 0. It keeps accepting connections until the drain ends: a
        client that connects meanwhile is told at once (`skynet status` shows it draining) and
        given no task. A second signal exits at once.
        Jobs also die with a node that is killed (SIGKILL): a small helper process kills them.
        With a token (SKYNET_TOKEN in the environment, or --token-file), only clients that prove
        they know it are served, and every link is encrypted: a Noise handshake (NNpsk0) with a
        fresh X25519 key per connection, then ChaCha20-Poly1305 on every message, so nothing can
        be read, forged, altered, replayed or reordered, not even later by someone who steals
        the token. The token itself never crosses the wire (docs/PROTOCOL.md). A client that
        offers the token in plain text, or the unencrypted handshake of protocol version 1, is
        refused with the version it needs.
        Repeated failed logins from one network (/24, IPv6 /64), or many from anywhere, are
        answered ever more slowly (up to 2 s), and logged per burst.

        A node runs only the jobs its operator declared: the built-in simulated `scan` always,
        and each --job NAME=COMMAND. A coordinator chooses a job by name and sends each task's
        input text, never a command. COMMAND is split into words as a POSIX shell would (quotes,
        backslashes) but never run by one: pipes, redirections, `;`, `$`, globs and a leading
        `~` are refused (quote them to mean the text). In a word, GNU parallel's replacement
        strings stand for parts of the task: {} its input, {.} the input without extension, {/}
        its base name, {//} its directory, {/.} the base name without extension, {#} the sector
        number (0-based), {%} the job slot (1...capacity, distinct among the tasks running at
        once); with none, the input is the last argument. The task's result is the command's
        stdout (one trailing newline removed); stdin is /dev/null; the environment adds
        SKYNET_INPUT, SKYNET_SECTOR and SKYNET_JOB, and never holds SKYNET_TOKEN (nor systemd's
        NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID, CREDENTIALS_DIRECTORY). Each task runs
        in a process group of its own, killed whole at the task's deadline or when the task is
        cancelled. Protected mode: a node that declares a --job and binds an address other than
        loopback refuses to start without a token (anyone reaching the port could run it).

        With --stdio the node opens no port: it serves the one coordinator at the other end of
        its stdin and stdout (a scan starts it so on each ssh host, the login being the
        authority: no token is asked for, SKYNET_TOKEN included). It prints nothing on stdout
        but protocol lines, logs only what matters to stderr, and exits within 1 s of stdin
        closing (the coordinator gone, however it ended), its jobs' process groups stopped.

        Under systemd (NOTIFY_SOCKET set; deploy/skynet-node.service) the node sends READY=1
        once it accepts connections, STATUS= lines, WATCHDOG=1 every half WATCHDOG_USEC, and
        STOPPING=1 when it begins to stop. In $CREDENTIALS_DIRECTORY, --token-file takes a
        token whose group bit is the mask of systemd's ACL (mode 0440).

        \(usage)

        \(optionTable.help)

        examples:
          skynet node --port 9001 --name alpha
          skynet node --port 0 --capacity 8 --failing-every 0
          skynet node --port 9001 --job sum='sha256sum {}'
          skynet node --port 9001 --job thumb='convert {} -resize 200x200 thumbs/{#}.png' --job wc='wc -c'
          SKYNET_TOKEN=… skynet node --host 0.0.0.0 --port 9001 --job sum='sha256sum {}'
          ssh gpu1 skynet node --stdio                (what a scan runs on its ssh host gpu1)
        """

    let options: Node.Options
    /// Hidden `--exit-with-parent` (see `optionTable`).
    let exitWithParent: Bool
    /// `--stdio`: one coordinator over stdin and stdout (`NodeCommand+Stdio.swift`).
    let stdio: Bool
    /// `--metrics`: where `/metrics` and `/healthz` are served (`NodeCommand+Metrics.swift`).
    let metrics: ListenAddress?

    init(arguments: [String]) throws(UsageError) {
        try self.init(arguments: arguments, program: ProgramDeclarations())
    }

    /// A node of `program`: its jobs beside the declared ones, its actor types.
    init(arguments: [String], program: ProgramDeclarations) throws(UsageError) {
        var args = try Self.optionTable.parse(arguments)
        stdio = args.flag("stdio")
        if stdio {
            args = try Self.stdioArguments(arguments, parsed: args)
        } else if args.string("stdio-args") != nil {
            throw UsageError("option '--stdio-args' goes with --stdio only")
        }
        guard stdio || args.string("port") != nil else { throw UsageError("option '--port' is required (0 picks a free port)") }
        let port = try args.int("port", default: 0)
        if args.string("name")?.isEmpty == true { throw UsageError("option '--name' must not be empty") }
        var options = Node.Options(name: args.string("name") ?? "")
        options.port = port
        options.host = args.stringOrDefault("host") ?? options.host
        // Over stdio the welcome's capacity is what tells a coordinator the host's cores.
        options.capacity = try args.int("capacity", default: stdio ? CoreCount.online(atMost: ClusterConfig.maxCapacity) : 4)
        options.failingEvery = try args.int("failing-every")
        options.maxConnections = try args.int("max-connections")
        options.idleTimeout = .seconds(try args.double("idle-timeout"))
        options.verbose = args.flag("verbose")
        options.drainTimeout = .seconds(try args.double("drain-timeout"))
        metrics = try Self.metricsAddress(args)
        // Over stdio no token is asked for (SKYNET_TOKEN included): the coordinator sends none,
        // and a node waiting for its proof would never serve.
        options.token = stdio ? nil : try ClusterToken.load(args)?.value
        options.logsConnections = !stdio
        options.workDir = try Self.workDir(args.string("work-dir"))
        options.maxFileSize = Int64(try args.bytes("max-file-size"))
        options.acceptsFiles = !args.flag("no-files")
        let maxOutput = try args.bytes("max-output")
        let declared = args.strings("job")
        options.jobs = try JobDeclarations.register(declared, in: program.jobs, maxOutput: maxOutput)
        options.actors = program.actors.map { ClusterActorSystem(name: Self.actorSystemName(options.name), registry: $0) }
        let hostsActors = !(program.actors?.names.isEmpty ?? true)
        if !stdio, !declared.isEmpty || hostsActors, options.token == nil, !Socket.isLoopback(options.host) {
            throw UsageError("""
                refusing to start: this node declares \(hostsActors ? "distributed actors" : "command jobs") and would listen on \(options.host) without \
                SKYNET_TOKEN or --token-file, so anyone who can reach its port could run them. Set SKYNET_TOKEN in \
                the environment of this node and of its coordinators (or give them all --token-file FILE), or bind \
                a loopback address (--host 127.0.0.1)
                """)
        }
        self.options = options
        exitWithParent = args.flag(String(NodeProcess.exitWithParentFlag.dropFirst(2)))
    }

    /// The name a node's actor IDs carry: its own name and a random tag, so that an ID of an
    /// actor of a node that restarted under the same name reaches no actor of the new one.
    static func actorSystemName(_ nodeName: String) -> String {
        "\(nodeName.isEmpty ? "node" : nodeName)-\(String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16))"
    }

    /// `--work-dir DIR` made absolute (a job's working directory is below it, and jobs run
    /// elsewhere than the node's cwd would not find a relative one): DIR must be a directory.
    static func workDir(_ given: String?) throws(UsageError) -> String? {
        guard let given else { return nil }
        guard !given.isEmpty, !given.utf8.contains(0) else { throw UsageError("option '--work-dir' wants a directory") }
        let path = given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        var stats = stat()
        guard stat(path, &stats) == 0, stats.st_mode & S_IFMT == S_IFDIR else {
            throw UsageError("option '--work-dir': \(given.escapingControlCharacters) is not a directory")
        }
        return path
    }

    /// A node log line, from the accept thread, reader threads or the pool: offered, never
    /// waited for (`Console.log`).
    static func log(_ line: String) {
        Console.log(line) { "[Node] \($0) log lines dropped: stderr is not being read" }
    }

    func run() async -> Int32 {
        if stdio { return await serveOverStdio() }
        let status = await serve()
        await Console.flush(within: .seconds(2))
        return status
    }

    private func serve() async -> Int32 {
        let signals = await TerminationSignals.install()
        // A second signal exits at once: the jobs still running go with it.
        signals.beforeExit { ChildProcess.killEveryGroup() }
        // Declared jobs die with the node even if it is killed (SIGKILL) before it stops them.
        if options.jobs.summaries.count > 1 { await GroupKeeper.startFromThisExecutable() }
        let node: Node
        do {
            node = try await Node.start(options) { Self.log($0) }
        } catch {
            await Console.printError("error: \(error)".escapingControlCharacters)
            if let error = error as? SocketError, error.code == EADDRINUSE {
                await Console.printError("hint: another process listens there; choose another --port (0 picks a free one)")
            } else if let error = error as? SocketError, error.code == EACCES {
                await Console.printError("hint: ports below 1024 need privileges; choose a port from 1024 up")
            }
            return 2
        }
        if options.token == nil, !Socket.isLoopback(options.host) {
            await Console.printError("[Node] Warning: listening on \(options.host) without SKYNET_TOKEN or --token-file: anyone who can reach this port can run tasks here")
        }
        let summaries = options.jobs.summaries
        if summaries.count > 1 {
            let list = summaries.keys.sorted().filter { $0 != JobRegistry.scan }.map { "\($0) (\(summaries[$0] ?? ""))" }
            await Console.printError("[Node] Jobs: scan (built in), \(list.joined(separator: ", "))".escapingControlCharacters)
        }
        guard let metricsServer = await startMetrics(for: node) else { return 2 }
        // What stderr said so far comes first on a shared terminal, but never waits long.
        await Console.flush(within: .seconds(1))
        Console.out("listening on \(Socket.authority(host: node.host, port: node.port))")
        let service = NodeService.ready(node, spawned: exitWithParent) { Self.log($0) }
        signals.received.whenFulfilled { [drainTimeout = options.drainTimeout] _ in service.stopping(within: drainTimeout) }  // STOPPING=1 as the drain begins
        defer { service.stopped() }
        if exitWithParent {
            ParentWatch.start {
                Self.log("[Node] Parent gone: stopping")
                Task {
                    await node.stop(grace: .milliseconds(500))
                    await Console.flush(within: .milliseconds(500))
                    ChildProcess.killEveryGroup()  // a job slow to stop does not outlive us
                    exit(0)
                }
            }
        }
        let signal = await signals.received.value
        await drain(node, signal: signal)
        await metricsServer.stop()
        return 0
    }
}

extension NodeCommand {
    /// The first termination signal drains the node: no new tasks, coordinators
    /// told, running tasks given `--drain-timeout`, the rest cancelled; then every job's
    /// process group still there is stopped and reaped, so none outlives the node.
    func drain(_ node: Node, signal: Int32) async {
        let timeout = options.drainTimeout
        let running = node.system.counters.running
        Self.log("[Node] Draining (signal \(signal)): up to \(String(cFormat: "%g", timeout.seconds)) s for \(running) running task\(running == 1 ? "" : "s")")
        await node.drain(within: timeout)
        // Cancelled tasks' jobs had their kill grace; a job that ignores SIGTERM is killed here.
        await ChildProcess.endEveryGroup(grace: .seconds(3))
    }
}
