import Foundation
@testable import SkyNetCluster
@testable import SkyNetNode
import SkyNetTestSupport
import Testing

struct ClusterConfigMembershipTests: ClusterConfigParsing {
    @Test func aGroupEntryKeepsItsFieldsAndDefaultsToTenSeconds() throws {
        let config = try parse(#"{"nodes":[{"name":"workers","host":"skynet-nodes.prod.svc","port":9001,"every_address":true,"capacity":3},{"name":"quick","host":"q.svc","port":9002,"every_address":true,"refresh":1},{"name":"alpha","host":"127.0.0.1","port":9003,"every_address":false}]}"#)
        #expect(config.nodes.map(\.everyAddress) == [true, true, false])
        #expect(config.nodes.map(\.refresh) == [nil, 1, nil])
        #expect(config.nodes.map(\.refreshInterval) == [10, 1, 10])
        #expect(config.nodes[0].capacity == 3)
        #expect(config.hasAddressGroups)
        #expect(try parse(#"{"nodes":[{"name":"a","host":"127.0.0.1","port":9001}]}"#).hasAddressGroups == false)
    }

    @Test func aMemberIsNamedByItsGroupAndAddress() throws {
        let group = try parse(#"{"nodes":[{"name":"workers","host":"skynet-nodes.prod.svc","port":9001,"every_address":true,"capacity":3}]}"#).nodes[0]
        let member = group.member(address: "10.0.3.7")
        #expect(member == ClusterConfig.Node(name: "workers/10.0.3.7", host: "10.0.3.7", port: 9001, capacity: 3))
        #expect(member.address == "10.0.3.7:9001")
        #expect(member.everyAddress == false)
        #expect(group.member(address: "fd00::7").name == "workers/fd00::7")
        #expect(group.member(address: "fd00::7").address == "[fd00::7]:9001")  // was fd00::7:9001, which reads as one address
    }

    @Test(arguments: [
        (#"{"nodes":[{"name":"w","ssh":"w","every_address":true}]}"#, #"nodes[0] (w): "every_address" needs "host" and "port", not "ssh""#),
        (#"{"nodes":[{"name":"w","ssh":"w","refresh":5}]}"#, #"nodes[0] (w) has "refresh" without "every_address": true"#),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"refresh":5}]}"#, #"nodes[0] (w) has "refresh" without "every_address": true"#),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":false,"refresh":5}]}"#, #"nodes[0] (w) has "refresh" without "every_address": true"#),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":0.2}]}"#, "nodes[0] (w) has refresh 0.2, not a number of seconds in 0.5...3600"),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":0}]}"#, "nodes[0] (w) has refresh 0.0, not a number of seconds in 0.5...3600"),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":3601}]}"#, "nodes[0] (w) has refresh 3601.0, not a number of seconds in 0.5...3600"),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":"10"}]}"#, "nodes[0].refresh is not a number"),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":"yes"}]}"#, "nodes[0].every_address is not true or false"),
        (#"{"nodes":[{"name":"w/10.0.0.1","host":"10.0.0.1","port":1},{"name":"w","host":"h","port":1,"every_address":true}]}"#,
         "nodes[0] (w/10.0.0.1) is named like a member of the address group nodes[1] (w): rename one of them"),
        (#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true},{"name":"w/x","host":"h2","port":1,"every_address":true}]}"#,
         "nodes[1] (w/x) is named like a member of the address group nodes[0] (w): rename one of them"),
        (#"{"nodes":[{"name":"w","host":"h","port":0,"every_address":true}]}"#, "nodes[0] (w) has port 0, outside 1...65535"),
    ])
    func aWrongGroupEntryIsNamed(text: String, message: String) {
        #expect(problem(text) == "cluster file c.json: \(message)")
    }

    @Test func theEdgesOfTheRefreshRangeAreAccepted() throws {
        #expect(try parse(#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":0.5}]}"#).nodes[0].refresh == 0.5)
        #expect(try parse(#"{"nodes":[{"name":"w","host":"h","port":1,"every_address":true,"refresh":3600}]}"#).nodes[0].refresh == 3600)
    }

    @Test func expandingGivesOneNodePerAddressAndKeepsAGroupThatDoesNotResolve() async throws {
        let config = try parse(#"{"nodes":[{"name":"alpha","host":"127.0.0.1","port":9001},{"name":"w","host":"w.test","port":9002,"every_address":true},{"name":"gone","host":"gone.test","port":9003,"every_address":true},{"name":"empty","host":"empty.test","port":9004,"every_address":true}]}"#)
        let nodes = await config.expandingAddressGroups { host, port in
            #expect(port != 9001)
            switch host {
            case "w.test": return ["10.0.0.1", "10.0.0.2"]
            case "empty.test": return []
            default: throw ResolverFailure()
            }
        }
        #expect(nodes.map(\.name) == ["alpha", "w/10.0.0.1", "w/10.0.0.2", "gone", "empty"])
        #expect(nodes.map(\.address) == ["127.0.0.1:9001", "10.0.0.1:9002", "10.0.0.2:9002", "gone.test:9003", "empty.test:9004"])
    }

    struct ResolverFailure: Error {}
}
