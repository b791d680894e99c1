import SkyNetActors
import SkyNetCluster
import SkyNetOptions
import SkyNetRuntime
import SkyNetSSH
import SkyNetScheduler

/// A program's actor system, linked to nodes of the same program: the nodes it starts itself
/// (`--spawn N`: this executable, as `ClusterProgram` serves it), hosts it logs in to with ssh
/// (`--ssh LOGIN`: this executable is shipped there, so every node runs this very build) and
/// those of a cluster file.
/// While a node is linked, `system` places actors on it and calls them there; a node whose
/// program declares other actor types is refused at the handshake (`Actors differ`).
public final class ActorCluster: Sendable {
    /// Which nodes to link to.
    public struct Options: Sendable {
        /// Nodes of this executable to start on this machine (`--spawn N`), each tied to this
        /// process (they stop when it ends, however it ends).
        public var spawn = 0
        /// The nodes of a cluster file (`--cluster FILE`).
        public var cluster = ClusterConfig()
        /// Hosts to log in to with ssh, each running a node of this program shipped there
        /// (`--ssh [N/][USER@]HOST[:PORT]`, repeatable or joined by commas).
        var ssh: [SSHLogin] = []
        /// The ssh program and its options (`--ssh-command`).
        var sshCommand = SSHCommand.standard
        /// The cluster token the nodes were started with (`--token-file FILE` or
        /// `SKYNET_TOKEN`); the spawned nodes get the same file.
        public var tokenFile: String?
        var token: String?
        /// How long `start` waits for every node to be linked.
        public var readyTimeout: Duration = .seconds(30)
        /// The bound of connecting to a node and of its handshake.
        public var timeout: Duration = .seconds(5)

        /// Links to nothing: a system alone, until options say otherwise.
        public init() {}

        /// The options of a command line: `--spawn N`, `--cluster FILE`, `--token-file FILE`
        /// (what `PROGRAM --help` should list); anything else is an `ActorClusterError` that
        /// says what is wrong, with the usage line.
        public init(arguments: [String]) throws(ActorClusterError) {
            do throws(UsageError) {
                self = try Self.parse(arguments)
            } catch {
                throw ActorClusterError(description: "\(error)\n\(Self.usage)")
            }
        }

        private static func parse(_ arguments: [String]) throws(UsageError) -> Options {
            let args = try optionTable.parse(arguments)
            var options = Options()
            options.spawn = try args.int("spawn")
            if let path = args.string("cluster") {
                do { options.cluster = try ClusterConfig.load(from: path) } catch { throw UsageError("\(error)") }
            }
            let token = try ClusterToken.load(args)
            options.tokenFile = token?.file
            options.token = token?.value
            do {
                for value in args.strings("ssh") {
                    let listed = try SSHLogin.list(value)
                    if listed.isEmpty { throw UsageError("option '--ssh' wants [N/][USER@]HOST[:PORT], or several joined by commas") }
                    options.ssh += listed
                }
                if let text = args.string("ssh-command") { options.sshCommand = try SSHCommand(text) }
            } catch {
                throw UsageError("\(error)")
            }
            return options
        }

        /// `--spawn`, `--cluster` and `--token-file`: their parsing, usage and help.
        static let optionTable = OptionTable<Options>(options: [
            .init("spawn", .count(0...64), default: "0", usage: "[--spawn N]", "N",
                  "start N nodes of this program on this machine, <range> (default <default>)"),
            .init("cluster", .text, usage: "[--cluster FILE]", "FILE", "link to the nodes of the cluster file FILE"),
            .init("ssh", .text, repeats: true, usage: "[--ssh [N/][USER@]HOST[:PORT] ...]", "LOGIN",
                  "log in to LOGIN with ssh and run a node of this program there, shipped to",
                  "~/.cache/skynet first (N/: its slots); repeatable, or joined by commas"),
            .init("ssh-command", .text, usage: "[--ssh-command 'ssh OPTIONS']", "COMMAND", "the ssh program and its options (default ssh)"),
            .init("token-file", .text, usage: "[--token-file FILE]", "FILE",
                  "the cluster token, from FILE (else SKYNET_TOKEN); the spawned nodes get it too",
                  spawned: { $0.tokenFile.map { ["--token-file", $0] } ?? [] }),
        ], usagePrefix: "usage: \(URL(fileURLWithPath: CommandLine.arguments.first ?? "PROGRAM").lastPathComponent)")

        /// The usage line of these options.
        public static var usage: String { optionTable.usage }
        /// Their help, one entry per option.
        public static var help: String { optionTable.help }
    }

    /// This program's actor system: `spawn(_:on:)` places actors on the linked nodes.
    public let system: ClusterActorSystem
    /// The `--spawn` nodes' processes, in order (`node1` first).
    package let nodes: [NodeProcess]
    private let links: PeerLinks

    /// Makes this program's actor system (named `name` and a random tag, so that two runs of
    /// the program linked to the same nodes are told apart; with the types of `actors`), starts
    /// the `--spawn` nodes and links to every node; returns once each is linked, or throws
    /// when one is not within `options.readyTimeout` (saying which, and why). `log` gets the
    /// links' events (`[Cluster] Connected: node1` …).
    public static func start(name: String = "main", actors: ActorRegistry, options: Options,
                             log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> ActorCluster {
        let spawnedNames = Set((0..<options.spawn).map { NodeProcess.spawnedName($0 + 1) })
        if let clash = options.cluster.nodes.first(where: { spawnedNames.contains($0.name) }) {
            throw ActorClusterError(description: "the cluster file's node \"\(clash.name)\" has the name of a spawned node; rename it")
        }
        let system = ClusterActorSystem(name: "\(name)-\(String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16))", registry: actors)
        system.relayCalls()
        let nodes = try await NodeProcess.startAll(options.spawn, arguments: Options.optionTable.spawnedArguments(for: options))
        let peers = ClusterConfig(nodes: options.cluster.nodes + nodes.map { .init(name: $0.name, host: $0.host, port: $0.port) }
                                      + options.ssh.map { ClusterConfig.Node(name: $0.description, ssh: $0) },
                                  capacity: options.cluster.capacity)
        var settings = PeerLinks.Settings(timeout: options.timeout, token: options.token)
        settings.actors = system
        // Over ssh, the node is always this program's own build: another would declare other types.
        settings.ssh = SSHSettings(command: options.sshCommand, ship: true) { log($0) }
        let progress = LinkProgress(expected: Set(peers.nodes.map(\.name)))
        let links = PeerLinks(cluster: peers, systems: Systems(), settings: settings) { event in
            log(event.description)
            progress.record(event)
        }
        let cluster = ActorCluster(system: system, nodes: nodes, links: links)
        do {
            try await withTimeout(options.readyTimeout) { await progress.allLinked.value }
        } catch {
            await cluster.stop()
            throw ActorClusterError(description: "not every node was linked within \(options.readyTimeout): \(progress.missing)")
        }
        return cluster
    }

    private init(system: ClusterActorSystem, nodes: [NodeProcess], links: PeerLinks) {
        self.system = system
        self.nodes = nodes
        self.links = links
    }

    /// Closes every link (calls in flight fail at once) and stops the spawned nodes.
    public func stop() async {
        await links.stop()
        await withTaskGroup(of: Void.self) { group in
            for node in nodes { group.addTask { await node.stop(grace: .seconds(2)) } }
        }
    }

}

/// Why an `ActorCluster` could not start.
public struct ActorClusterError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, naming the nodes.
    public let description: String
}

/// Which nodes have been linked, and what the others last reported.
private final class LinkProgress: Sendable {
    private struct State {
        var waiting: Set<String>
        var last: [String: String] = [:]
    }
    private let state: Locked<State>
    let allLinked = AsyncSignal<Void>()

    init(expected: Set<String>) {
        state = Locked(State(waiting: expected))
        if expected.isEmpty { allLinked.fulfil(()) }
    }

    func record(_ event: ClusterEvent) {
        state.withLock { state in
            if case .connected(let name, _) = event {
                state.waiting.remove(name)
                if state.waiting.isEmpty { allLinked.fulfil(()) }
            } else {
                state.last[event.peer] = event.description
            }
        }
    }

    /// The nodes not linked yet, each with its last report.
    var missing: String {
        state.withLock { state in
            state.waiting.sorted().map { name in state.last[name].map { "\(name) (\($0))" } ?? name }.joined(separator: ", ")
        }
    }
}
