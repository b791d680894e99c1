import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
import SkyNetTestSupport
import Testing

/// The dashboard's rows for drain and membership events: a draining peer, a found member.
@Suite struct ScanBoardDrainTests {
    @Test func aDrainingPeerShowsDrainingAndAFoundMemberItsAddress() throws {
        let board = ScanBoard(total: 4, systems: [.init(name: "beta", address: "127.0.0.1:1")])
        board.record(.draining("beta", reason: "it is stopping; its running tasks may finish within 30 s"))
        board.record(.discovered("workers/10.0.3.7", group: "workers", host: "skynet-nodes", address: "10.0.3.7:9001"))
        let rows = try systemRows(board.currentState())
        #expect(rows["beta"].map { [$0.state, $0.detail] } == ["draining", "it is stopping; its running tasks may finish within 30 s"])
        #expect(rows["workers/10.0.3.7"]?.state == "connecting")
        let cluster = try objects(parse(board.currentState()), "cluster")
        #expect(cluster.first { $0["name"] as? String == "workers/10.0.3.7" }?["address"] as? String == "10.0.3.7:9001")
        board.record(.connected("beta", link: .plain))
        #expect(try systemRows(board.currentState())["beta"]?.state == "connected")
    }
}
