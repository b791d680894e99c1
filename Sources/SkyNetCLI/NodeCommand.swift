#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SkyNet

/// `skynet node`: serves scans to coordinators over JSON Lines on TCP.
struct NodeCommand: Command {
    static let name = "node"
    static let summary = "run a node that executes the tasks peers send it, with the jobs it declares"
    static let usage = """
        usage: skynet node --port PORT [--host 127.0.0.1] [--name NAME] [--capacity 4] [--failing-every 10]
                           [--job NAME=COMMAND ...] [--max-output 256K]
                           [--max-connections 256] [--idle-timeout 60] [--token-file FILE] [--verbose]
        """
    static let help = """
        Run a node: accept connections from coordinators and run the tasks they send, at most
        --capacity at a time over all connections. When it accepts connections it prints
        `listening on HOST:PORT` on stdout (the real port, for --port 0); logs go to stderr.
        A log never holds the node up: while stderr is not being read, log lines are dropped
        and counted, and a line says how many once it is read again.
        SIGINT, SIGTERM or SIGHUP: stop accepting, let running scans finish (up to 10 s), then
        stop their jobs (SIGTERM, SIGKILL 2 s later, every job's whole process group), exit 0.
        Jobs also die with a node that is killed (SIGKILL): a small helper process kills them.
        With a token (SKYNET_TOKEN in the environment, or --token-file), only clients that prove
        they know it are served: the token itself never crosses the wire, and every line after
        the handshake carries a MAC, so none can be forged, altered, replayed or reordered (see
        docs/PROTOCOL.md; this is not encryption: inputs and results are readable on the wire).
        A protocol v1 client that sends the token in plain text is still served, with a warning.
        Repeated failed logins from one network (/24, IPv6 /64), or many from anywhere, are
        answered ever more slowly (up to 2 s), and logged per burst.

        A node runs only the jobs its operator declared: the built-in simulated `scan` always,
        and each --job NAME=COMMAND. A coordinator chooses a job by name and sends each task's
        input text, never a command. COMMAND is split into words as a POSIX shell would (quotes,
        backslashes) but never run by one: pipes, redirections, `;`, `$`, globs and a leading
        `~` are refused (quote them to mean the text). In a
        word, {} stands for the task's input and {#} for its sector number (0-based); with no
        placeholder the input is the last argument. The task's result is the command's stdout
        (one trailing newline removed); stdin is /dev/null; the environment adds SKYNET_INPUT,
        SKYNET_SECTOR and SKYNET_JOB, and never holds SKYNET_TOKEN. Each task runs in a process
        group of its own, killed whole at the task's deadline or when the task is cancelled.
        Protected mode: a node that declares a --job and binds an address other than loopback
        refuses to start without a token (anyone reaching the port could run it).

        \(usage)

        options:
          --port PORT          TCP port, 0...65535; 0 picks a free one (required)
          --host HOST          address to bind (default 127.0.0.1)
          --name NAME          the name peers see (default node-PORT)
          --capacity N         tasks run at once, 1...1024 (default 4)
          --failing-every N    the built-in scan fails every N-th task; 0 never (default 10);
                               declared jobs never fail on purpose
          --job NAME=COMMAND   declare a command job, repeatable (at most \(JobDeclarations.maxJobs)); NAME is
                               1 to 64 letters, digits, '-', '_' or '.', and not 'scan'
          --max-output BYTES   the most stdout a job's task may print, 1...512K (default 256K;
                               K = 1024, M = 1048576); more is a failure, never cut short
          --max-connections N  clients served at once, 1...65536 (default 256); one more that
                               says hello is answered busy. Connections that have not said hello
                               have a budget of their own (64, 16 per address), those in the token
                               handshake another; 3 s from connecting to be done
          --idle-timeout S     close a client that sent nothing, not even a ping, for S seconds
                               while none of its scans runs, 1...86400 (default 60); coordinators
                               ping idle links every 15 s
          --token-file FILE    read the token from FILE (its final newline dropped) instead of
                               SKYNET_TOKEN; FILE must be readable by its owner only (chmod 600).
                               A token is at least 16 bytes (make one: openssl rand -hex 32)
          --verbose            log every task to stderr

        examples:
          skynet node --port 9001 --name alpha
          skynet node --port 0 --capacity 8 --failing-every 0
          skynet node --port 9001 --job sum='sha256sum {}'
          skynet node --port 9001 --job thumb='convert {} -resize 200x200 thumbs/{#}.png' --job wc='wc -c'
          SKYNET_TOKEN=… skynet node --host 0.0.0.0 --port 9001 --job sum='sha256sum {}'
        """

    let options: Node.Options
    /// Hidden `--exit-with-parent`: stdin is a pipe from the parent (`NodeProcess`); at its
    /// EOF the parent is gone and the node stops at once.
    let exitWithParent: Bool

    init(arguments: [String]) throws(UsageError) {
        let args = try Arguments(arguments, options: [
            "port", "host", "name", "capacity", "failing-every", "max-connections", "idle-timeout", "job", "max-output",
            "token-file",
        ], repeating: ["job"], flags: ["verbose", "exit-with-parent"])
        guard args.string("port") != nil else { throw UsageError("option '--port' is required (0 picks a free port)") }
        let port = try args.int("port", default: 0, in: 0...65535)
        if args.string("name")?.isEmpty == true { throw UsageError("option '--name' must not be empty") }
        var options = Node.Options(name: args.string("name") ?? "")
        options.port = port
        options.host = args.string("host") ?? "127.0.0.1"
        options.capacity = try args.int("capacity", default: 4, in: 1...ClusterConfig.maxCapacity)
        options.failingEvery = try args.int("failing-every", default: 10, in: 0...1_000_000_000)
        options.maxConnections = try args.int("max-connections", default: 256, in: 1...65536)
        options.idleTimeout = .seconds(try args.double("idle-timeout", default: 60, in: 1...86400))
        options.verbose = args.flag("verbose")
        options.token = try ClusterToken.load(args)?.value
        let maxOutput = try args.bytes("max-output", default: CommandJob.defaultMaxOutput, in: JobDeclarations.maxOutputRange)
        let declared = args.strings("job")
        options.jobs = try JobDeclarations.register(declared, in: options.jobs, maxOutput: maxOutput)
        if !declared.isEmpty, options.token == nil, !Socket.isLoopback(options.host) {
            throw UsageError("""
                refusing to start: this node declares command jobs and would listen on \(options.host) without \
                SKYNET_TOKEN or --token-file, so anyone who can reach its port could run them. Set SKYNET_TOKEN in \
                the environment of this node and of its coordinators (or give them all --token-file FILE), or bind \
                a loopback address (--host 127.0.0.1)
                """)
        }
        self.options = options
        exitWithParent = args.flag("exit-with-parent")
    }

    /// A node log line. Offered to the console's queue and never waited for: it is written
    /// from the accept thread, reader threads and the pool, and a logger must not stop a
    /// server, so while stderr is not read lines are dropped, counted, and the count said.
    static func log(_ line: String) {
        Console.log(line) { "[Node] \($0) log lines dropped: stderr is not being read" }
    }

    func run() async -> Int32 {
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
        // What stderr said so far comes first on a shared terminal, but never waits long.
        await Console.flush(within: .seconds(1))
        Console.out("listening on \(node.host.contains(":") ? "[\(node.host)]" : node.host):\(node.port)")
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
        Self.log("[Node] Stopping (signal \(signal)): finishing running scans")
        await node.stop(grace: .seconds(10))
        // The scans still running were cancelled: their jobs get their kill grace, then every
        // group left (a job that ignores SIGTERM) is killed and reaped before we exit.
        await ChildProcess.endEveryGroup(grace: .seconds(3))
        return 0
    }
}
