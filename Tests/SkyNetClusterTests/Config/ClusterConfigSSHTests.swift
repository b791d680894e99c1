import Foundation
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetSSH
import SkyNetTestSupport
import Testing

struct ClusterConfigSSHTests: ClusterConfigParsing {
    @Test func sshEntriesMixWithTCPOnes() throws {
        let config = try parse(#"{"nodes":[{"name":"gpu1","ssh":"4/alice@gpu1.lab:2222"},{"name":"alpha","host":"127.0.0.1","port":9001},{"name":"b","ssh":"b"}]}"#)
        let login = SSHLogin(slots: 4, user: "alice", host: "gpu1.lab", port: 2222)
        #expect(config.nodes == [ClusterConfig.Node(name: "gpu1", ssh: login, capacity: 4),
                                 ClusterConfig.Node(name: "alpha", port: 9001),
                                 ClusterConfig.Node(name: "b", ssh: SSHLogin(host: "b"))])
        #expect(config.nodes.map(\.address) == ["ssh alice@gpu1.lab:2222", "127.0.0.1:9001", "ssh b"])
        #expect(config.nodes[2].port == 22)
        #expect(config.nodes[2].capacity == nil)
    }

    @Test(arguments: [
        (#"{"nodes":[{"name":"g","ssh":"g","host":"h"}]}"#, #"nodes[0] (g) has both "ssh" and "host"/"port": give one of them"#),
        (#"{"nodes":[{"name":"g","ssh":"g","port":22}]}"#, #"nodes[0] (g) has both "ssh" and "host"/"port": give one of them"#),
        (#"{"nodes":[{"name":"g","ssh":"4/g","capacity":2}]}"#, "nodes[0] (g) has capacity 2 but its ssh login says 4/: give one of them"),
        (#"{"nodes":[{"name":"g","ssh":"a:b@g"}]}"#, "nodes[0] (g): ssh login 'a:b@g': a password in a login (user:password@) is refused: use a key (BatchMode forbids prompts)"),
        (#"{"nodes":[{"name":"g","ssh":4}]}"#, "nodes[0].ssh is not a string"),
    ])
    func aWrongSSHEntryIsNamed(text: String, message: String) {
        #expect(problem(text) == "cluster file c.json: \(message)")
    }

    @Test func aCapacityEqualToTheSlotsIsFine() throws {
        #expect(try parse(#"{"nodes":[{"name":"g","ssh":"4/g","capacity":4}]}"#).nodes.first?.capacity == 4)
    }
}
