import SkyNetSSH
import SkyNetWire

/// Reading a cluster file's JSON into a `ClusterConfig`, naming the field that is wrong.
extension ClusterConfig {
    static func decode(_ value: JSONValue, file: String) throws(ConfigError) -> ClusterConfig {
        let root = try Fields(value, path: "", file: file, shape: #"the top level must be an object, like {"nodes": [...]}"#)
        guard case .array(let entries)? = root.fields["nodes"] else {
            throw root.fail(root.fields["nodes"] == nil ? #"missing field "nodes""# : "nodes is not a list")
        }
        var nodes: [Node] = []
        for (index, entry) in entries.enumerated() {
            let node = try Fields(entry, path: "nodes[\(index)]", file: file, shape: "nodes[\(index)] is not an object")
            nodes.append(try decodeNode(node, label: "nodes[\(index)]"))
        }
        return ClusterConfig(nodes: nodes, capacity: try root.optionalInt("capacity"), timeout: try root.optionalNumber("timeout"))
    }

    /// One entry of `nodes`: `"ssh"` (a login) or `"host"` and `"port"`, never both; with
    /// `"every_address"`, `host` names a group of nodes (one per address).
    private static func decodeNode(_ node: Fields, label: String) throws(ConfigError) -> Node {
        let name = try node.string("name")
        let capacity = try node.optionalInt("capacity")
        let everyAddress = try node.optionalBool("every_address") ?? false
        let refresh = try node.optionalNumber("refresh")
        guard node.fields["ssh"] != nil else {
            var entry = Node(name: name, host: try node.string("host"), port: try node.int("port"), capacity: capacity)
            entry.everyAddress = everyAddress
            entry.refresh = refresh
            return entry
        }
        if node.fields["host"] != nil || node.fields["port"] != nil {
            throw node.fail("\(label) (\(name)) has both \"ssh\" and \"host\"/\"port\": give one of them")
        }
        if everyAddress {
            throw node.fail("\(label) (\(name)): \"every_address\" needs \"host\" and \"port\", not \"ssh\"")
        }
        if refresh != nil {
            throw node.fail("\(label) (\(name)) has \"refresh\" without \"every_address\": true")
        }
        let text = try node.string("ssh")
        let login: SSHLogin
        do {
            login = try SSHLogin(parsing: text)
        } catch {
            throw node.fail("\(label) (\(name)): \(error.description)")
        }
        return Node(name: name, ssh: login, capacity: capacity ?? login.slots)
    }
}

/// The fields of one JSON object of a cluster file, with errors that name the field.
private struct Fields {
    let fields: [String: JSONValue]
    let path: String
    let file: String

    init(_ value: JSONValue, path: String, file: String, shape: String) throws(ConfigError) {
        self.path = path
        self.file = file
        guard case .object(let fields) = value else { throw ConfigError(file: file, problem: shape) }
        self.fields = fields
    }

    func fail(_ problem: String) -> ConfigError { ConfigError(file: file, problem: problem) }

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func missing(_ key: String) -> ConfigError {
        fail("missing field \"\(key)\"" + (path.isEmpty ? "" : " in \(path)"))
    }

    func string(_ key: String) throws(ConfigError) -> String {
        guard let value = fields[key] else { throw missing(key) }
        guard case .string(let text) = value else { throw fail("\(name(key)) is not a string") }
        return text
    }

    func int(_ key: String) throws(ConfigError) -> Int {
        guard let value = try optionalInt(key) else { throw missing(key) }
        return value
    }

    func optionalInt(_ key: String) throws(ConfigError) -> Int? {
        switch fields[key] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)?: throw fail("\(name(key)) is not an integer: \(value.asWritten)")
        case .outOfRange(let text)?: throw fail("\(name(key)) is not an integer: \(text) is out of range")
        default: throw fail("\(name(key)) is not an integer")
        }
    }

    func optionalBool(_ key: String) throws(ConfigError) -> Bool? {
        switch fields[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw fail("\(name(key)) is not true or false")
        }
    }

    func optionalNumber(_ key: String) throws(ConfigError) -> Double? {
        switch fields[key] {
        case nil, .null?: return nil
        case .int(let value)?: return Double(value)
        case .double(let value)?: return value
        case .outOfRange(let text)?: throw fail("\(name(key)) is out of range: \(text)")
        default: throw fail("\(name(key)) is not a number")
        }
    }
}
