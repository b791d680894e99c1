import SkyNetCluster
import SkyNetOptions

extension NodeCommand {
    /// `--failing-every`, of a node and of a scan (which gives it to the nodes it spawns).
    static let failingEvery = OptionValue.count(0...1_000_000_000)

    /// `--max-file-size`, of a node and of a scan (which gives it to the nodes it starts).
    static let maxFileSizeRange = 1...(1 << 40)

    /// Every option of `skynet node`: its parsing, usage line and help.
    static let optionTable = OptionTable<NodeCommand>(options: [
        .init("port", .count(0...65535), usage: "--port PORT", "PORT", "TCP port, <range>; 0 picks a free one (required without --stdio)"),
        .init("host", .text, default: "127.0.0.1", usage: "[--host <default>]", "HOST", "address to bind (default <default>)"),
        .init("name", .text, usage: "[--name NAME]", "NAME", "the name peers see (default node-PORT)"),
        .init("capacity", .count(1...ClusterConfig.maxCapacity), default: "4", usage: "[--capacity <default>]", "N",
              "tasks run at once, <range> (default <default>; with --stdio what nproc says)"),
        .init("failing-every", failingEvery, default: "10", usage: "[--failing-every <default>]", "N",
              "the built-in scan fails every N-th task; 0 never (default <default>);",
              "declared jobs never fail on purpose"),
        .init("job", .text, repeats: true, usage: "[--job NAME=COMMAND ...]", line: 1, "NAME=COMMAND",
              "declare a command job, repeatable (at most \(JobDeclarations.maxJobs)); NAME is",
              "1 to 64 letters, digits, '-', '_' or '.', and not 'scan'"),
        .init("max-output", .bytes(JobDeclarations.maxOutputRange), default: "256K", usage: "[--max-output <default>]", line: 1, "BYTES",
              "the most stdout a job's task may print, <range> (default <default>;",
              "K = 1024, M = 1048576); more is a failure, never cut short"),
        .init("work-dir", .text, usage: "[--work-dir DIR]", line: 2, "DIR",
              "where the files that travel with tasks go: a private directory",
              "skynet-node-PID-XXXXXX made in DIR (default $TMPDIR, else",
              "/tmp) at the first file, removed when the node stops; one a killed",
              "node left there is removed by the next node that starts"),
        .init("max-file-size", .bytes(maxFileSizeRange), default: "1G", usage: "[--max-file-size <default>]", line: 2, "BYTES",
              "the largest file a coordinator may send, <range> (default <default>;",
              "K, M, G, T count 1024, 1048576, ...); the files a task returns are",
              "bounded by the coordinator's own --max-file-size"),
        .init("no-files", .flag, usage: "[--no-files]", line: 2, "",
              "take no file work: the welcome offers none, so a scan that sends or",
              "returns files gives this node no task"),
        .init("max-connections", .count(1...65536), default: "256", usage: "[--max-connections <default>]", line: 3, "N",
              "clients served at once, <range> (default <default>); one more that",
              "says hello is answered busy. Connections that have not said hello",
              "have a budget of their own (64, 16 per address), those in the token",
              "handshake another; 3 s from connecting to be done"),
        .init("idle-timeout", .seconds(1...86400), default: "60", usage: "[--idle-timeout <default>]", line: 3, "S",
              "close a client that sent nothing, not even a ping, for S seconds",
              "while none of its scans runs, <range> (default <default>); coordinators",
              "ping idle links every 15 s"),
        .init("drain-timeout", .seconds(0...86400), default: "30", usage: "[--drain-timeout <default>]", line: 3, "S",
              "on SIGTERM, SIGINT or SIGHUP: take no new tasks, tell coordinators,",
              "let running tasks finish for up to S seconds, then cancel them",
              "(their coordinators run them elsewhere), <range> (default <default>)"),
        .init("token-file", .text, usage: "[--token-file FILE]", line: 3, "FILE",
              "read the token from FILE (its final newline dropped) instead of",
              "SKYNET_TOKEN; FILE must be readable by its owner only (chmod 600).",
              "A token is at least 16 bytes (make one: openssl rand -hex 32)"),
        .init("metrics", .text, usage: "[--metrics [HOST:]PORT]", line: 4, "[HOST:]PORT",
              "serve /metrics (Prometheus text format) and /healthz (200 while it",
              "takes work, 503 while it stops) on HOST:PORT (default host 127.0.0.1;",
              "0 picks a free port); no login: it shows no input, result or token"),
        .init("verbose", .flag, usage: "[--verbose]", line: 3, "", "log every task to stderr"),
        .init("stdio", .flag, usage: "[--stdio [--stdio-args HEX]]", line: 3, "",
              "serve one coordinator over stdin and stdout instead of TCP (what",
              "a scan runs on each of its ssh hosts): no port, no token (the login",
              "is the authority); --capacity defaults to the cores nproc counts; exits",
              "within 1 s of stdin closing, its jobs stopped. Not with --port,",
              "--host, --token-file or --max-connections"),
        .init("stdio-args", .text, usage: nil, line: 3, "HEX",
              "more arguments of this node, as hex of their UTF-8 joined by NUL",
              "(passes any login shell untouched; what a scan sends its ssh hosts)"),
        // Hidden: stdin is a pipe from the parent (`NodeProcess`); at its EOF the parent is
        // gone and the node stops at once.
        .init(String(NodeProcess.exitWithParentFlag.dropFirst(2)), .flag, usage: nil),
    ], usagePrefix: "usage: skynet node")
}
