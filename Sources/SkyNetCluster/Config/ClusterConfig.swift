import SkyNetRuntime
import SkyNetSSH
import SkyNetScheduler
import SkyNetTransport
import SkyNetWire

/// The static peer list of cluster.json: which nodes a coordinator hands work to.
public struct ClusterConfig: Sendable, Equatable {
    /// One peer of the list: a node reached over TCP (or, from a cluster file, over ssh).
    public struct Node: Sendable, Equatable {
        /// The name reports and events give the node.
        public var name: String
        /// Where the node listens; for an ssh node, the login's host (for display only).
        public var host: String
        /// Its TCP port; for an ssh node, the login's port or 22 (for display only).
        public var port: Int
        /// At most this many tasks in flight on the node; nil: the cluster's capacity (for an
        /// ssh node: the host's cores, as its welcome says).
        public var capacity: Int?
        /// The login of a node reached over ssh (`skynet node --stdio` on the host); nil: TCP.
        package var ssh: SSHLogin?
        /// Whether this entry is an address group (`every_address`): one peer `NAME/ADDRESS` per
        /// address `host` resolves to, re-resolved every `refresh` seconds.
        package var everyAddress = false
        /// Seconds between two lookups of an address group; nil: `defaultRefresh`.
        package var refresh: Double?

        /// A node listening on `host:port`, named `name` in reports; `capacity` nil: the cluster's.
        public init(name: String, host: String = "127.0.0.1", port: Int, capacity: Int? = nil) {
            self.name = name
            self.host = host
            self.port = port
            self.capacity = capacity
        }

        /// A node reached by logging in with `ssh`.
        package init(name: String, ssh: SSHLogin, capacity: Int? = nil) {
            self.name = name
            self.host = ssh.host
            self.port = ssh.port ?? 22
            self.capacity = capacity
            self.ssh = ssh
        }

        /// How the node is reached, for people: `127.0.0.1:9001`, `[fd00::7]:9001`,
        /// `ssh alice@gpu1:2222`.
        package var address: String {
            if let ssh { return "ssh \(ssh)" }
            return Socket.authority(host: host, port: port)
        }
    }

    /// The peers, in the order a scan prefers them.
    public var nodes: [Node]
    /// Slots per node when a node names none; nil: the coordinator's `--capacity`.
    package var capacity: Int?
    /// Seconds one remote request may take; nil: the coordinator's `--timeout` (default 5).
    package var timeout: Double?

    /// A peer list made in code rather than read from a file (`load(from:)`).
    public init(nodes: [Node] = [], capacity: Int? = nil, timeout: Double? = nil) {
        self.nodes = nodes
        self.capacity = capacity
        self.timeout = timeout
    }

    /// Reads and validates a cluster file.
    public static func load(from path: String) throws(ConfigError) -> ClusterConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw ConfigError(file: path, problem: reason)
        }
        return try parse(data, file: path)
    }

    /// Decodes and validates the text of a cluster file; `file` names it in errors.
    package static func parse(_ data: Data, file: String) throws(ConfigError) -> ClusterConfig {
        // A byte order mark, as some editors write, is not part of the JSON.
        let text = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
        // Our own strict parser: it says where the text breaks, and what is wrong with a field.
        let value: JSONValue
        do {
            value = try JSONParser.parse(text)
        } catch {
            let (line, column) = error.location(in: text)
            throw ConfigError(file: file, problem: "not valid JSON: line \(line), column \(column): \(error.reason)")
        }
        let config = try decode(value, file: file)
        try config.validate(file: file)
        return config
    }

    func validate(file: String) throws(ConfigError) {
        func fail(_ problem: String) -> ConfigError { ConfigError(file: file, problem: problem) }
        if let capacity, !(0...Self.maxCapacity).contains(capacity) {
            throw fail("capacity \(capacity) is outside 0...\(Self.maxCapacity)")
        }
        if let timeout, !(timeout.isFinite && timeout > 0 && timeout <= 3600) {
            throw fail("timeout \(timeout) is not a number of seconds in (0, 3600]")
        }
        var seen = Set<String>()
        for (index, node) in nodes.enumerated() {
            let label = "nodes[\(index)]"
            if node.name.isEmpty { throw fail("\(label) has an empty name") }
            if node.name == Self.localName { throw fail("\(label): the name \"\(Self.localName)\" is the coordinator's own system") }
            if !seen.insert(node.name).inserted { throw fail("node name \"\(node.name)\" appears twice") }
            if node.host.isEmpty { throw fail("\(label) (\(node.name)) has an empty host") }
            if let slots = node.ssh?.slots, let capacity = node.capacity, capacity != slots {
                throw fail("\(label) (\(node.name)) has capacity \(capacity) but its ssh login says \(slots)/: give one of them")
            }
            if node.ssh == nil, !(1...65535).contains(node.port) {
                throw fail("\(label) (\(node.name)) has port \(node.port), outside 1...65535")
            }
            if let capacity = node.capacity, !(0...Self.maxCapacity).contains(capacity) {
                throw fail("\(label) (\(node.name)) has capacity \(capacity), outside 0...\(Self.maxCapacity)")
            }
        }
        try validateAddressGroups(file: file)
    }

    /// The name of a coordinator's own system; no peer may take it.
    package static let localName = Systems.localName

    /// The most slots any one system may have.
    package static let maxCapacity = 1024
}

/// A cluster file that cannot be used, naming the file and the fault.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    /// The cluster file's path, as given.
    public let file: String
    /// What is wrong with it, and what to do.
    public let problem: String
    /// `cluster file PATH: PROBLEM`.
    public var description: String { "cluster file \(file): \(problem)" }
}
