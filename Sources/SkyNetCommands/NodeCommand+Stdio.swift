import SkyNetCluster
import SkyNetNode
import SkyNetOptions
import SkyNetRuntime
import SkyNetTransport

/// `skynet node --stdio`: one coordinator over this process's stdin and stdout, as `scan
/// --ssh` starts it on each host. No listener exists and no token is asked for: the only
/// source of bytes is the stdin the SSH server opened after it authenticated the login, and
/// `--stdio` refuses `--host` and `--port`, so no node is both token-less and on the network.
extension NodeCommand {
    /// Options that make no sense without a listener, or would ask for a token nobody sends.
    static let refusedWithStdio = ["port", "host", "token-file", "max-connections", "metrics", String(NodeProcess.exitWithParentFlag.dropFirst(2))]
    /// The longest `--stdio-args` accepted, in hex digits: a remote command is at most 100 KiB
    /// (`RemoteCommand.maxBytes`), below Linux's 128 KiB for one argument.
    static let maxStdioArgumentsHex = 100 * 1024

    /// The usage line of `skynet node --stdio`: the options that go with it, `--stdio-args` too.
    static let stdioUsage = OptionTable<NodeCommand>(
        options: optionTable.options.filter { !(refusedWithStdio + ["stdio"]).contains($0.name) }
            + [Option("stdio-args", .text, usage: "[--stdio-args HEX]", line: 3)],
        usagePrefix: "usage: skynet node --stdio").usage

    /// A usage error of a `--stdio` command line shows the `--stdio` usage: the TCP form's
    /// `--port PORT` would name what it just refused.
    static func usage(for arguments: [String]) -> String {
        arguments.contains("--stdio") ? stdioUsage : usage
    }

    /// The arguments of a `--stdio` command line. With `--stdio-args HEX`, HEX (the UTF-8 of the
    /// arguments joined by NUL, which no argument can hold) carries all of them, and the command
    /// line holds nothing else: taking it out of a longer line could shift another option's
    /// value into an option. Hex passes through every login shell (sh, bash, fish, csh) as it
    /// is, where quoting rules differ; GNU parallel encodes its remote commands for the same
    /// reason.
    static func stdioArguments(_ arguments: [String], parsed args: Arguments) throws(UsageError) -> Arguments {
        for name in refusedWithStdio where args.flag(name) || args.string(name) != nil {
            throw UsageError("option '--\(name)' cannot go with --stdio (it serves stdin and stdout: no port, no token)")
        }
        guard let hex = args.string("stdio-args") else { return args }
        let alone = Set(["--stdio", "--stdio-args", hex, "--stdio-args=\(hex)"])
        guard arguments.allSatisfy(alone.contains) else {
            throw UsageError("option '--stdio-args' carries every other argument: give only --stdio beside it")
        }
        let inner = try decodeStdioArguments(hex)
        let carried: Arguments
        do throws(UsageError) { carried = try optionTable.parse(inner) } catch { throw UsageError("in --stdio-args: \(error)") }
        for name in refusedWithStdio + ["stdio", "stdio-args"] where carried.flag(name) || carried.string(name) != nil {
            throw UsageError("in --stdio-args: option '--\(name)' is not allowed there")
        }
        return try optionTable.parse(inner + ["--stdio"])
    }

    /// The arguments HEX stands for; a usage error for anything but hex of UTF-8.
    static func decodeStdioArguments(_ hex: String) throws(UsageError) -> [String] {
        guard hex.utf8.count <= maxStdioArgumentsHex else {
            throw UsageError("option '--stdio-args' is longer than \(maxStdioArgumentsHex) hex digits")
        }
        guard let bytes = Secrets.bytes(fromHex: hex), let text = String(validating: bytes, as: UTF8.self) else {
            throw UsageError("option '--stdio-args' wants hex (0-9, a-f) of UTF-8 arguments joined by NUL")
        }
        return bytes.isEmpty ? [] : text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
    }

    /// Serves the coordinator on stdin/stdout until stdin ends (or stdout breaks, or a signal
    /// comes), then stops the jobs' process groups and exits within 1 s: a host keeps nothing
    /// of a scan whose coordinator is gone, however it ended. Logs go to stderr only.
    func serveOverStdio() async -> Int32 {
        // A closed stdin or stdout is no channel (`main` put /dev/null there, so that no
        // descriptor of ours took the number): say so, instead of serving nobody.
        let closed = [(0, "stdin"), (1, "stdout")].filter { StandardDescriptors.closedAtStart.contains($0.0) }.map(\.1)
        guard closed.isEmpty else {
            Console.err("error: --stdio needs stdin and stdout open (the coordinator's channel), but \(closed.joined(separator: " and ")) "
                        + "\(closed.count > 1 ? "were" : "was") closed when skynet started")
            return 2
        }
        // First of all, before anything can be spawned: no child may inherit the channel.
        let stream: DescriptorPair
        do {
            stream = try DescriptorPair.takeStandardStreams()
        } catch {
            Console.err("error: \(error)")
            return 1
        }
        let signals = await TerminationSignals.install()
        signals.beforeExit { ChildProcess.killEveryGroup() }
        // Declared jobs die with the node even if it is killed (SIGKILL) before it stops them.
        if options.jobs.summaries.count > 1 { await GroupKeeper.startFromThisExecutable() }
        let connection = Connection(stream: stream, peer: Self.stdioPeer(), limits: options.limits)
        let node = Node.serve(connection, options: options) { Self.log($0) }
        let done = AsyncSignal<Int32?>()
        connection.closed.whenFulfilled { _ in done.fulfil(nil) }
        signals.received.whenFulfilled { done.fulfil($0) }
        if let signal = await done.value { Self.log("[Node] Stopping (signal \(signal))") }
        // The backstop: whatever hangs below, nothing outlives the 1 s the coordinator counts on.
        DeadlineTimer.shared.schedule(after: .milliseconds(900)) {
            ChildProcess.killEveryGroup()
            _exit(0)
        }
        connection.close()
        // The session's end cancelled its scans; their jobs get a short grace, then SIGKILL.
        await node.stop(grace: .zero)
        await ChildProcess.endEveryGroup(grace: .milliseconds(400), reapWithin: .milliseconds(300))
        await Console.flush(within: .milliseconds(150))
        return 0
    }

    /// `ssh ADDRESS` from `SSH_CLIENT` (the address the login came from), for the node's log;
    /// `stdio` when it is missing or not an address.
    static func stdioPeer() -> String {
        let client = ProcessInfo.processInfo.environment["SSH_CLIENT"] ?? ""
        let address = client.prefix { $0 != " " }
        let isAddress = !address.isEmpty && address.count <= 64 && address.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
        return isAddress ? "ssh \(address)" : "stdio"
    }
}
