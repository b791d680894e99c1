import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetHTTP
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport

/// Runs `body` with a dashboard served on 127.0.0.1:0 over a small board, and always stops it.
func withDashboard(token: String? = nil, board: ScanBoard = dashboardTestBoard(),
                   _ body: (Dashboard) async throws -> Void) async throws {
    let dashboard = try await Dashboard.start(board: board, systems: Systems(), host: "127.0.0.1", port: 0, token: token)
    do {
        try await body(dashboard)
        await dashboard.stop()
    } catch {
        await dashboard.stop()
        throw error
    }
}

/// A board of a scan of 10 tasks over the local system and one peer.
func dashboardTestBoard() -> ScanBoard {
    ScanBoard(total: 10, systems: [.init(name: "local", address: "this process", isLocal: true),
                                   .init(name: "alpha", address: "127.0.0.1:9001")])
}

/// A request as the parser would make it.
func dashboardRequest(_ path: String, query: String = "", method: String = "GET", headers: [(String, String)] = []) -> HTTPRequest {
    HTTPRequest(method: method, path: path, query: query, version: "HTTP/1.1",
                headers: headers.map { (name: $0.0.lowercased(), value: $0.1) })
}

/// The login proof for `nonce`, as DashboardAccess documents it: hex HMAC-SHA256(token,
/// "skynet dashboard proof\n" ‖ nonce).
func dashboardProof(token: String, nonce: String) -> String {
    Secrets.hex(HMACSHA256(key: Array(token.utf8)).tag(Array(("skynet dashboard proof\n" + nonce).utf8)))
}

/// The nonce of a `/login/challenge` body.
func dashboardNonce(_ body: [UInt8]) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["nonce"] as? String
}

extension HTTPClientForTests {
    /// `GET path` (HTTP/1.1, `headers` added, and `Host: 127.0.0.1:PORT` unless they hold a
    /// Host), parsed.
    static func get(_ dashboard: Dashboard, _ path: String, headers: [String] = []) async throws -> Response {
        let host = headers.contains { $0.lowercased().hasPrefix("host:") } ? [] : ["Host: 127.0.0.1:\(dashboard.port)"]
        return try await get(dashboard.server, "GET \(path) HTTP/1.1\r\n" + (host + headers).map { $0 + "\r\n" }.joined() + "\r\n")
    }
}
