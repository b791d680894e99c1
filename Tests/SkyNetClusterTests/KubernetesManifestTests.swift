import Foundation
import Testing
@testable import SkyNetCluster

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

    @Test func itsClusterFileIsAnAddressGroupSkynetAccepts() throws {
        let line = try #require(try text().split(separator: "\n").first { $0.contains("\"every_address\"") && $0.trimmingPrefix(while: \.isWhitespace).hasPrefix("{") })
        let config = try ClusterConfig.parse(Data(line.trimmingPrefix(while: \.isWhitespace).utf8), file: "kubernetes.yaml")
        #expect(config.nodes.count == 1)
        #expect(config.nodes[0].everyAddress)
        #expect(config.nodes[0].host == "skynet-nodes")
        #expect(config.nodes[0].port == 9001)
    }
}
