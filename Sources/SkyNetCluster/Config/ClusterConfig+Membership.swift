import SkyNetTransport

/// Address groups (`"every_address": true`): one cluster.json entry whose host names many
/// nodes, one per address it resolves to, as a headless Kubernetes Service does.
extension ClusterConfig {
    /// How a name becomes addresses: `Socket.addresses(of:port:)` outside tests.
    package typealias Resolver = @Sendable (String, Int) async throws -> [String]

    /// Seconds between two lookups of a group when its entry names none.
    package static let defaultRefresh = 10.0

    /// The most members a group has: a name that resolves to more addresses (a big or wrong
    /// Service, a hostile resolver) gives its first ones, in sorted order, and no more links.
    package static let maxGroupMembers = 256

    /// The addresses of an answer a group uses: distinct, sorted, at most `maxGroupMembers`.
    static func groupMembers(of answer: [String]) -> [String] {
        Array(Set(answer).sorted().prefix(maxGroupMembers))
    }

    /// The shortest and longest `refresh` a group may have, in seconds.
    package static let refreshRange = 0.5...3600.0

    /// The resolver of the real system: getaddrinfo on the resolver's pool (`Socket.addresses`).
    package static let systemResolver: Resolver = { host, port in try await Socket.addresses(of: host, port: port) }

    /// Whether any entry is an address group, which can bring new peers at any time.
    package var hasAddressGroups: Bool { nodes.contains { $0.everyAddress } }

    /// The nodes with every group replaced by one node per address its host resolves to now
    /// (each group looked up once, all at the same time; at most `maxGroupMembers` each). A
    /// group that does not resolve, or to nothing, stays itself, so that a status probe says
    /// its host is unknown.
    package func expandingAddressGroups(resolve: @escaping Resolver = ClusterConfig.systemResolver) async -> [Node] {
        let answers = await withTaskGroup(of: (Int, [String]).self) { group in
            for (index, node) in nodes.enumerated() where node.everyAddress {
                group.addTask { (index, (try? await resolve(node.host, node.port)) ?? []) }
            }
            var answers: [Int: [String]] = [:]
            for await (index, addresses) in group { answers[index] = addresses }
            return answers
        }
        return nodes.enumerated().flatMap { index, node -> [Node] in
            guard let addresses = answers[index], !addresses.isEmpty else { return [node] }
            return Self.groupMembers(of: addresses).map { node.member(address: $0) }
        }
    }

    /// Checks the group fields: `refresh` only on a group and within `refreshRange`, and no
    /// other entry named like one of a group's members (`G/…`).
    func validateAddressGroups(file: String) throws(ConfigError) {
        func fail(_ problem: String) -> ConfigError { ConfigError(file: file, problem: problem) }
        for (index, node) in nodes.enumerated() {
            let label = "nodes[\(index)] (\(node.name))"
            if let refresh = node.refresh {
                guard node.everyAddress else { throw fail("\(label) has \"refresh\" without \"every_address\": true") }
                guard refresh.isFinite, Self.refreshRange.contains(refresh) else {
                    throw fail("\(label) has refresh \(refresh), not a number of seconds in 0.5...3600")
                }
            }
            guard node.everyAddress else { continue }
            if let other = nodes.firstIndex(where: { $0.name.hasPrefix(node.name + "/") }) {
                throw fail("nodes[\(other)] (\(nodes[other].name)) is named like a member of the address group \(label): rename one of them")
            }
        }
    }
}

extension ClusterConfig.Node {
    /// Seconds between two lookups of this group.
    package var refreshInterval: Double { refresh ?? ClusterConfig.defaultRefresh }

    /// The member of this group at `address`: named `GROUP/ADDRESS` (IPv6 raw, `workers/fd00::7`),
    /// with the group's port and capacity.
    package func member(address: String) -> ClusterConfig.Node {
        ClusterConfig.Node(name: "\(name)/\(address)", host: address, port: port, capacity: capacity)
    }
}
