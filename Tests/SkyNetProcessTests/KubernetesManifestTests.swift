import Foundation
@testable import SkyNet
@testable import SkyNetCommands
@testable import SkyNetCluster
import SkyNetTestSupport
import Testing

/// deploy/kubernetes.yaml, read as text (no cluster here to apply it to): the fields the
/// issue asks for, and a cluster.json that skynet itself accepts.
struct KubernetesManifestTests {
    static let manifest = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/kubernetes.yaml")

    func text() throws -> String { try String(contentsOf: Self.manifest, encoding: .utf8) }

    @Test func theManifestHasTheServiceShapeTheIssueAsksFor() throws {
        let text = try text()
        for needle in ["kind: Service", "clusterIP: None", "kind: StatefulSet", "serviceName: skynet-nodes", "kind: Job",
                       "kind: ConfigMap", "secretName: skynet-token", "path: /healthz", "\"--token-file\", \"/run/skynet/token\"",
                       "\"--metrics\", \"0.0.0.0:9101\"", "backoffLimit: 0", "runAsNonRoot: true", "readOnlyRootFilesystem: true"] {
            #expect(text.contains(needle), "missing: \(needle)")
        }
        #expect(!text.contains("livenessProbe:"))  // it would kill draining pods
        #expect(!text.contains("publishNotReadyAddresses: true"))
        let grace = try #require(text.firstMatch(of: /terminationGracePeriodSeconds: (\d+)/).flatMap { Int($0.1) })
        let drain = try #require(text.firstMatch(of: /"--drain-timeout", "(\d+)"/).flatMap { Int($0.1) })
        #expect(grace > drain)
    }

    /// The ConfigMap's cluster.json (one line).
    func clusterFileLine() throws -> String {
        let lines = try text().split(separator: "\n").map { String($0.trimmingPrefix(while: \.isWhitespace)) }
        return try #require(lines.first { $0.contains("\"every_address\"") && $0.hasPrefix("{") })
    }

    /// The lines of each pod-level `securityContext:` block (indented 6: a pod spec's field).
    func podSecurityContexts() throws -> [[String]] {
        let lines = try text().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return lines.indices.filter { lines[$0] == "      securityContext:" }.map { start in
            // Each field without its comment.
            Array(lines[(start + 1)...].prefix { $0.hasPrefix("        ") }).map {
                String($0.prefix { $0 != "#" }).trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// The `args: [...]` of each container, in order (the node's, then the scan's).
    func containerArguments() throws -> [[String]] {
        var rest = try text()[...]
        var all: [[String]] = []
        while let start = rest.range(of: "args: ["), let end = rest[start.upperBound...].firstIndex(of: "]") {
            let json = "[" + rest[start.upperBound..<end] + "]"
            all.append(try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String], "\(json)"))
            rest = rest[rest.index(after: end)...]
        }
        return all
    }

    /// A Secret volume's files are root's; uid 65532 reads them only as their group, which
    /// kubelet makes the `fsGroup`. Without it the init container's `install` fails (EACCES).
    @Test func bothPodsRunAsOneUserWhoseGroupIsTheFsGroupThatCanReadTheSecret() throws {
        let contexts = try podSecurityContexts()
        #expect(contexts.count == 2)
        for context in contexts {
            #expect(context.contains("runAsUser: 65532"), "\(context)")
            #expect(context.contains("runAsGroup: 65532"), "\(context)")
            #expect(context.contains("fsGroup: 65532"), "\(context)")
        }
    }

    /// The node's and the scan's arguments are command lines skynet accepts, as they stand
    /// (the token file and the cluster file put where the pods mount them).
    @Test func theContainersArgumentsAreCommandLinesSkynetAccepts() throws {
        let arguments = try containerArguments()
        try #require(arguments.count == 2)
        let scratch = try TokenScratch()
        let token = try scratch.tokenFile(TokenScratch.randomToken() + "\n")
        let cluster = scratch.path("cluster.json")
        try Data(try clusterFileLine().utf8).write(to: URL(fileURLWithPath: cluster))
        let placed = { (list: [String]) in
            list.map { $0 == "/run/skynet/token" ? token : $0 == "/etc/skynet/cluster.json" ? cluster : $0 == "$(POD_NAME)" ? "skynet-node-0" : $0 }
        }

        #expect(arguments[0].first == "node")
        let node = try NodeCommand(arguments: placed(Array(arguments[0].dropFirst())))
        #expect(node.options.host == "0.0.0.0")
        #expect(node.options.port == 9001)
        #expect(node.options.name == "skynet-node-0")
        #expect(node.options.token != nil)
        #expect(node.metrics?.host == "0.0.0.0" && node.metrics?.port == 9101)
        #expect(node.options.workDir == "/tmp")
        // Probes and scrapes go to the port --metrics serves, and the Service to the node's.
        let text = try text()
        for needle in ["containerPort: 9101", "prometheus.io/port: \"9101\"", "port: metrics", "containerPort: 9001", "port: 9001"] {
            #expect(text.contains(needle), "missing: \(needle)")
        }
        let grace = try #require(text.firstMatch(of: /terminationGracePeriodSeconds: (\d+)/).flatMap { Int($0.1) })
        #expect(Double(grace) > node.options.drainTimeout.seconds)

        #expect(arguments[1].first == "scan")
        let scan = try ScanCommand(arguments: placed(Array(arguments[1].dropFirst())))
        #expect(scan.localCapacity == 0)
        #expect(scan.cluster.nodes.first?.everyAddress == true)
        #expect(scan.token != nil)
        #expect(scan.dashboard?.port == 8080)
    }

    @Test func itsClusterFileIsAnAddressGroupSkynetAccepts() throws {
        let config = try ClusterConfig.parse(Data(try clusterFileLine().utf8), file: "kubernetes.yaml")
        #expect(config.nodes.count == 1)
        #expect(config.nodes[0].everyAddress)
        #expect(config.nodes[0].host == "skynet-nodes")
        #expect(config.nodes[0].port == 9001)
    }
}
