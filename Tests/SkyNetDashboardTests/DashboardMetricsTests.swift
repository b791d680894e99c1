import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetHTTP
@testable import SkyNetMetrics
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

/// A coordinator's `/metrics` and `/healthz` on its dashboard port: served without a session
/// (Prometheus has none) where `/state` needs one, the Host check kept, the board's slots and
/// links and the wrong proofs counted.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DashboardMetricsTests {
    static let token = "dashboard-metrics-token-0123456789"

    func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func metricsAndHealthzNeedNoSessionWhereStateDoes() async throws {
        try await withDashboard(token: Self.token) { dashboard in
            #expect(try await HTTPClientForTests.get(dashboard, "/state").status == 401)
            let metrics = try await HTTPClientForTests.get(dashboard, "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.headers["content-type"] == PrometheusText.contentType)
            #expect(metrics.text.contains("# TYPE process_open_fds gauge"))
            let health = try await HTTPClientForTests.get(dashboard, "/healthz")
            #expect(health.status == 200 && health.text == "ok\n")
            // Another site's name pointed at 127.0.0.1 is still refused.
            #expect(try await HTTPClientForTests.get(dashboard, "/metrics", headers: ["Host: evil.example:80"]).status == 421)
        }
    }

    @Test func theBoardsSlotsAndLinksAndWrongProofsAreCounted() async throws {
        let board = dashboardTestBoard()
        board.update([SlotUse(name: "local", capacity: 2, inFlight: 1, suspended: false),
                      SlotUse(name: "alpha", capacity: 4, inFlight: 3, suspended: false)])
        board.record(ClusterEvent.connected("alpha", link: .plain))
        try await withDashboard(token: Self.token, board: board) { dashboard in
            let challenge = try await HTTPClientForTests.get(dashboard, "/login/challenge")
            let nonce = try #require(dashboardNonce(challenge.body))
            let wrong = dashboardProof(token: "not-the-token-0123456789abcdef", nonce: nonce)
            #expect(try await HTTPClientForTests.get(dashboard, "/login?nonce=\(nonce)&proof=\(wrong)").status == 403)
            let text = try await HTTPClientForTests.get(dashboard, "/metrics").text
            #expect(value(text, #"skynet_slots{state="running"}"#) == 4)
            #expect(value(text, #"skynet_slots{state="free"}"#) == 2)
            #expect(value(text, #"skynet_connections{state="authenticated"}"#) == 1)
            #expect(value(text, #"skynet_connections{state="pending"}"#) == 0)
            #expect(value(text, "skynet_login_failures_total") == 1)
            // An address would show as `:9001` or a quoted `"9001"`; a bare 9001 may be part of
            // a number (the process's bytes of memory).
            #expect(!text.contains("alpha") && !text.contains(":9001") && !text.contains(#""9001""#), "a peer's name or address shows")
        }
    }

    /// A peer that went away keeps its row (and its last slot picture) on the board, but no
    /// slots in `/metrics`: they counted as running and free after it was gone.
    @Test func aGonePeersLastSlotsAreNotCounted() async throws {
        let board = dashboardTestBoard()
        board.update([SlotUse(name: "local", capacity: 2, inFlight: 1, suspended: false),
                      SlotUse(name: "alpha", capacity: 4, inFlight: 3, suspended: false)])
        board.record(ClusterEvent.connected("alpha", link: .plain))
        board.record(ClusterEvent.disconnected("alpha", reason: "closed by peer"))
        board.update([SlotUse(name: "local", capacity: 2, inFlight: 1, suspended: false)])
        try await withDashboard(token: Self.token, board: board) { dashboard in
            let text = try await HTTPClientForTests.get(dashboard, "/metrics").text
            #expect(value(text, #"skynet_slots{state="running"}"#) == 1)
            #expect(value(text, #"skynet_slots{state="free"}"#) == 1)
            #expect(value(text, #"skynet_connections{state="authenticated"}"#) == 0)
        }
    }
}
