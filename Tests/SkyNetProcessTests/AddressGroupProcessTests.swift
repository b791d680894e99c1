import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster

/// An address group of cluster.json through the real `skynet`, on a name that
/// resolves the same way everywhere (the numeric 127.0.0.1): the scan and `skynet status` use
/// one peer per address, named `GROUP/ADDRESS`. (Membership that changes is MembershipTests',
/// and the namespace test's.)
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AddressGroupProcessTests {
    func writeGroup(_ cluster: TestCluster, host: String = "127.0.0.1", port: Int? = nil) throws {
        let root: [String: Any] = ["nodes": [
            ["name": "g", "host": host, "port": port ?? cluster.nodes[0].port, "every_address": true, "refresh": 1] as [String: Any],
            ["name": "nowhere", "host": "no-such-host.invalid", "port": 9, "every_address": true],
        ]]
        try JSONSerialization.data(withJSONObject: root).write(to: URL(fileURLWithPath: cluster.clusterFile))
    }

    @Test func aScanFindsTheMemberOfAGroupAndRunsOnIt() async throws {
        try await withCluster(nodes: 1, nodeArguments: ["--failing-every", "0"]) { cluster in
            try writeGroup(cluster)
            let run = try await cluster.scan(["--local-capacity", "0", "--total", "6", "--duration", "0", "--json"])
            #expect(run.status == 0)
            let found = run.lines.filter { $0.contains(#""event":"discovered""#) }
            #expect(found.count == 1)
            #expect(found.first?.contains(#""system":"g/127.0.0.1""#) == true)
            #expect(found.first?.contains(#""address":"127.0.0.1""#) == true)
            #expect(run.lines.filter { $0.contains(#""event":"completed""#) && $0.contains(#""system":"g/127.0.0.1""#) }.count == 6)
        }
    }

    @Test func statusListsEachAddressAndAGroupThatDoesNotResolveAsOneRow() async throws {
        try await withCluster(nodes: 1) { cluster in
            try writeGroup(cluster)
            let run = try await runSkynet(["status", "--cluster", cluster.clusterFile])
            #expect(run.status == 1)
            let member = try #require(run.lines.first { $0.hasPrefix("g/127.0.0.1 ") })
            #expect(member.contains("127.0.0.1:\(cluster.nodes[0].port)"))
            #expect(member.contains(" up "))
            let nowhere = try #require(run.lines.first { $0.hasPrefix("nowhere ") })
            #expect(nowhere.contains("down (unknown host)"))
            #expect(run.lines.count == 3)
        }
    }
}
