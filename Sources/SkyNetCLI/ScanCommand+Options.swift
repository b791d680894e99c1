import SkyNet

extension ScanCommand {
    /// Every option of `skynet scan`: its parsing, usage line, help and the spawned nodes' command line.
    static let optionTable = OptionTable<ScanCommand>(options: [
        .init("total", .count(0...10_000_000), usage: "[--total 20]", "N", """
            sectors to scan, <range> (default 20); with --inputs, run at
            most the first N inputs (default: all of them)
            """),
        .init("cluster", .text, usage: "[--cluster FILE]", "FILE", """
            the static peer list (default ./cluster.json when it exists;
            with --spawn, only the spawned nodes)
            """),
        .init("spawn", .count(0...64), usage: "[--spawn N]", "N", """
            start N local `skynet node` processes on free ports for this scan,
            use them as peers and stop them afterwards, <range>
            """),
        .init("duration", .seconds(0...ScanTask.maxDuration), usage: "[--duration 1.0]", "S",
              "seconds of simulated work per task, <range> (default 1.0)"),
        .init("timeout", .seconds(0.001...3600), usage: "[--timeout 5]", "S", """
            seconds one remote request may take, longer than --duration
            (default: the cluster file's, else 5)
            """),
        .init("capacity", .count(0...ClusterConfig.maxCapacity), usage: "[--capacity 4]", line: 1, "N",
              "slots per system, <range> (default 4)", spawned: { ["--capacity", String(max(1, $0.capacity))] }),
        .init("local-capacity", .count(0...ClusterConfig.maxCapacity), usage: "[--local-capacity N]", line: 1, "N", """
            slots of this process's own system (default: --capacity);
            0 only dispatches, and re-runs go to the first free system
            """),
        .init("failing-every", NodeCommand.failingEvery, usage: "[--failing-every 10]", line: 1, "N", """
            the local system (and spawned nodes) fail every N-th task; 0 never
            (default 10)
            """, spawned: { ["--failing-every", String($0.failingEvery)] }),
        .init("max-attempts", .count(1...100), usage: "[--max-attempts 5]", line: 1, "N",
              "tries per task before giving up, <range> (default 5)"),
        .init("journal", .text, usage: "[--journal FILE [--resume]]", line: 2, "FILE", """
            append a JSON line per completed sector to FILE as it completes
            (locked while the scan runs; an existing one only with --resume)
            """),
        .init("resume", .flag, usage: nil, "", """
            skip the sectors FILE already holds and run the rest; with
            --results, first print the results FILE holds and never printed
            """),
        .init("json", .flag, usage: "[--json]", line: 2, "", "print JSON Lines events instead of log lines (see README)"),
        .init("quiet", .flag, usage: "[--quiet]", line: 2, "",
              "no live progress line (also: NO_COLOR set, or stderr not a terminal)"),
        .init("token-file", .text, usage: "[--token-file FILE]", line: 2, "FILE",
              "the cluster's token, instead of SKYNET_TOKEN (chmod 600 FILE)",
              // A token from the environment reaches the nodes through it; one from a file, as that file.
              spawned: { $0.token?.file.map { ["--token-file", $0] } ?? [] }),
        .init("dashboard", .text, usage: "[--dashboard [HOST:]PORT [--dashboard-linger S]]", line: 5, "[HOST:]PORT", """
            serve a live dashboard in the browser at http://HOST:PORT/
            (HOST 127.0.0.1 unless given; PORT 0 picks a free one; with a
            token the page asks for it)
            """),
        .init("dashboard-linger", .seconds(0...86400), usage: nil, "S", """
            keep serving the final state S seconds after the scan, <range>
            (default 0)
            """),
        .init("job", .text, usage: "[--job NAME[=COMMAND]]", line: 3, section: 1, help: [
            ("NAME", """
                run the job NAME on each input (default: scan, the built-in simulated
                scan); only systems that declare it get its tasks
                """),
            ("NAME=COMMAND", """
                also declare it for this process's own system and the --spawn nodes:
                COMMAND is split into words like sh would, never run by a shell;
                {} is the input, {#} the sector; no {}: the input is the last word
                """),
        ], spawned: { scan in scan.jobCommand.map { ["--job", "\(scan.job)=\($0.text)"] } ?? [] }),
        .init("inputs", .text, usage: "[--inputs FILE|-]", line: 3, section: 1, "FILE", """
            one input per line, sector i is line i (0-based); - reads stdin;
            a trailing \\r is dropped; each line valid UTF-8, at most 131008 bytes
            (a pipe or device is copied aside first, up to 1 GiB)
            """),
        .init("results", .flag, usage: "[--results [--keep-order]]", line: 3, section: 1, "", """
            print only each task's result to stdout, whole, as it completes;
            the log lines go to stderr (not with --json)
            """),
        .init("keep-order", .flag, usage: nil, section: 1, "", """
            with --results: in input order (at most \(orderWindow) tasks run ahead
            of the oldest one not finished); a task that gave up prints an
            empty line in its place
            """),
        .init("task-timeout", .seconds(0.001...ScanTask.maxTimeout), usage: "[--task-timeout S]", line: 4, section: 1, "S", """
            each task's deadline once started: its work is stopped (a command's
            whole process group) and the task fails and runs again
            """),
        .init("max-output", .bytes(JobDeclarations.maxOutputRange), usage: "[--max-output BYTES]", line: 4, section: 1, "BYTES", """
            the most output one command may print, <range> (default 256K;
            K = 1024, M = 1048576); more is a failure, never cut
            """, spawned: { $0.maxOutput.map { ["--max-output", String($0)] } ?? [] }),
        .init("allow-job-mismatch", .flag, usage: "[--allow-job-mismatch]", line: 4, section: 1, "", """
            also use peers that run the job as another command (other words,
            not just other quoting) than this scan's --job NAME=COMMAND (or
            the first peer's), after a warning; without it they are not used
            """),
    ], usagePrefix: "usage: skynet scan", sections: ["options:", "real work:"])
}
