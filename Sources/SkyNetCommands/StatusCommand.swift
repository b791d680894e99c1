import SkyNetCluster
import SkyNetOptions
import SkyNetRuntime
import SkyNetSSH
import SkyNetTransport
import SkyNetWire

/// `skynet status`: pings every peer of the cluster file and says which are up.
struct StatusCommand: Command {
    static let name = "status"
    static let summary = "ping every peer of the cluster file and show which are up"
    static let usage = optionTable.usage
    static let help = """
        Ping every node of the cluster file at once and print a table: name, address, up or
        down (and why: refused, timed out, unauthorized, unknown host), running/capacity,
        completed tasks and the ping's round trip, and, for nodes of a program with distributed
        actors, the actors each hosts by type. With a token (SKYNET_TOKEN or --token-file),
        each node must prove it knows it, and the token is never sent. A node with "ssh" in the
        cluster file is checked by logging in and starting a node over the session (`skynet`
        from the host's PATH), as a scan would: down says why, in ssh's words; with --watch, every
        round logs in again.

        \(usage)

        \(optionTable.help)

        exit status: 0 every node is up, 1 some node is down, 2 bad usage or a bad cluster file;
        with --watch, 0 when stopped by Ctrl-C, SIGTERM or SIGHUP (or when stdout is closed).

        examples:
          skynet status
          skynet status --cluster cluster.json --json
          skynet status --watch --interval 0.5
        """

    let cluster: ClusterConfig
    let timeout: Double
    let json: Bool
    let token: String?
    let clusterPath: String
    /// Seconds between rounds with --watch; nil: probe once.
    let interval: Double?
    /// How ssh nodes are logged in to (`--ssh-command`).
    let sshCommand: SSHCommand

    init(arguments: [String]) throws(UsageError) {
        let args = try Self.optionTable.parse(arguments)
        if args.string("interval") != nil, !args.flag("watch") { throw UsageError("option '--interval' needs --watch") }
        interval = args.flag("watch") ? try args.double("interval") : nil
        clusterPath = args.string("cluster") ?? "cluster.json"
        guard FileManager.default.fileExists(atPath: clusterPath) || args.string("cluster") != nil else {
            throw UsageError("no ./cluster.json here: name one with --cluster FILE")
        }
        cluster = try ScanCommand.loadCluster(named: clusterPath)
        timeout = try args.double("timeout")
        json = args.flag("json")
        token = try ClusterToken.load(args)?.value
        if let text = args.string("ssh-command") {
            guard cluster.nodes.contains(where: { $0.ssh != nil }) else {
                throw UsageError("--ssh-command is for ssh nodes: the cluster file \(clusterPath) has none")
            }
            do { sshCommand = try SSHCommand(text) } catch { throw UsageError("--ssh-command: \(error)") }
        } else {
            sshCommand = .standard
        }
    }

    func run() async -> Int32 {
        Socket.ignoreBrokenPipes()
        if let interval { return await watch(every: interval) }
        let statuses = await probeAll()
        if json {
            for status in statuses { await Console.print(Self.json(status)) }
        } else {
            await Console.print(Self.table(statuses))
        }
        await Console.flush()
        return statuses.allSatisfy(\.isUp) ? 0 : 1
    }

    /// Probes every node at once, each bounded by --timeout; in the cluster file's order. An
    /// address group is resolved first: one row per address (one `unknown host` row if none).
    func probeAll() async -> [PeerStatus] {
        let token = self.token
        let limit = Duration.seconds(timeout)
        let ssh = SSHSettings(command: sshCommand)
        // A lookup that hangs (a dead DNS server) is given up after --timeout: its thread ends on its own.
        let nodes = await cluster.expandingAddressGroups { host, port in
            try await withTimeout(limit) { try await Socket.addresses(of: host, port: port) }
        }
        return await withTaskGroup(of: (Int, PeerStatus).self) { group in
            for (index, node) in nodes.enumerated() {
                group.addTask { (index, await PeerStatus.probe(node, token: token, timeout: limit, ssh: ssh)) }
            }
            return await group.reduce(into: [(Int, PeerStatus)]()) { $0.append($1) }.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    static func table(_ statuses: [PeerStatus]) -> String {
        // The actors column only when some node hosts actors (a program's nodes).
        let withActors = statuses.contains { if case .up(let pong, _, _) = $0.state { pong.actors != nil } else { false } }
        let header = ["name", "address", "state", "running", "completed", "round trip", "link"] + (withActors ? ["actors"] : [])
        let rows = statuses.map { status -> [String] in
            let address = status.node.address
            switch status.state {
            case .up(let pong, let milliseconds, let link):
                let actors = pong.actors.map { $0.isEmpty ? "none" : $0.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") } ?? "-"
                return [status.node.name, address, pong.draining ? "up (draining)" : "up", "\(pong.running)/\(pong.capacity)", String(pong.completed),
                        String(cFormat: "%.2f ms", milliseconds), link.rawValue] + (withActors ? [actors] : [])
            case .down(let reason):
                return [status.node.name, address, "down (\(reason))", "-", "-", "-", "-"] + (withActors ? ["-"] : [])
            }
        }
        // Names from a shared cluster file and reasons from the nodes' answers come from outside.
        .map { $0.map(\.escapingControlCharacters) }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { cells in
            cells.enumerated().map { $1.padded(to: widths[$0]) }
                // Without the spaces and tabs at either end (Foundation's `.whitespaces`).
                .joined(separator: "  ").trimming { $0 == "\t" || $0.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator } }
        }.joined(separator: "\n")
    }

    /// One node's status as a JSON object; with --watch, `round` and `time` come first.
    static func json(_ status: PeerStatus, round: (number: Int, time: String)? = nil) -> String {
        var json = JSONLine()
        if let round {
            json.add("round", round.number)
            json.add("time", round.time)
        }
        json.add("name", status.node.name)
        json.add("address", status.node.address)
        switch status.state {
        case .up(let pong, let milliseconds, let link):
            json.add("up", true)
            json.add("link", link.rawValue)
            json.add("running", pong.running)
            json.add("capacity", pong.capacity)
            json.add("completed", pong.completed)
            json.add("failed", pong.failed)
            json.add("round_trip_ms", milliseconds)
            if pong.draining { json.add("draining", true) }
            if let actors = pong.actors {
                var counts = JSONLine()
                for (type, count) in actors.sorted(by: { $0.key < $1.key }) { counts.add(type, count) }
                json.add("actors", object: counts)
            }
        case .down(let reason):
            json.add("up", false)
            json.add("reason", reason)
        }
        return String(decoding: json.line.dropLast(), as: UTF8.self)
    }
}

extension StatusCommand {
    /// Every option of `skynet status`: its parsing, usage line and help.
    static let optionTable = OptionTable<StatusCommand>(options: [
        .init("cluster", .text, usage: "[--cluster FILE]", "FILE", "the static peer list (default ./cluster.json)"),
        .init("timeout", .seconds(0.001...60), default: "2", usage: "[--timeout <default>]", "S",
              "seconds each node may take to connect and answer, <range> (default <default>)"),
        .init("token-file", .text, usage: "[--token-file FILE]", "FILE",
              "read the token from FILE (owner-readable only) instead of SKYNET_TOKEN"),
        .init("ssh-command", .text, usage: "[--ssh-command CMD]", "CMD",
              "the ssh program and options for the cluster file's ssh nodes, split",
              "into words, no shell (default ssh)"),
        .init("json", .flag, usage: "[--json]", "", "one JSON object per node instead of the table"),
        .init("watch", .flag, usage: "[--watch [--interval 1]]", "",
              "probe again every --interval until Ctrl-C: in a terminal the table is",
              "redrawn in place under a line with the time and the cluster file; piped,",
              "each round is that line and the table, then a blank line; with --json,",
              "one object per node per round, with \"round\" and \"time\""),
        .init("interval", .seconds(0.1...3600), default: "1", usage: nil, "S",
              "seconds from the start of one round to the next, <range> (default <default>);",
              "a round never starts before the last one ended"),
    ], usagePrefix: "usage: skynet status", column: 19)
}
