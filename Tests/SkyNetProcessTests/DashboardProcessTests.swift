import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

extension ProcessTests {
    /// `skynet scan --dashboard` as a user runs it: the address on stderr, `/state` equal to the
    /// `--json` summary during the linger, Ctrl-C ending the linger, and the option's errors.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct DashboardProcessTests {
        @Test func stateDuringTheLingerEqualsTheJSONSummaryAndCtrlCEndsIt() async throws {
            let scan = try RunningProcess(["scan", "--total", "40", "--duration", "0.02", "--spawn", "2", "--json",
                                           "--dashboard", "0", "--dashboard-linger", "30"])
            defer { scan.kill() }
            let announced = try await scan.waitForErrorLine { $0.hasPrefix("Dashboard: http://") }
            // The address comes as soon as the page is served: before the scan's end.
            #expect(!scan.lines.contains { $0.contains(#""event":"summary""#) })
            let address = try #require(announced.wholeMatch(of: /Dashboard: http:\/\/127\.0\.0\.1:(\d+)\//), "\(announced)")
            let port = try #require(Int(address.1))

            let summaryLine = try await scan.waitForLine { $0.contains(#""event":"summary""#) }
            // The linger's note comes once the board holds the end.
            try await scan.waitForErrorLine { $0.hasPrefix("Dashboard: the final state stays at http://127.0.0.1:\(port)/") }
            #expect(childProcesses(of: scan.pid).isEmpty, "the spawned nodes are stopped before the linger")
            let response = try await dashboardGet(port: port, "/state")
            #expect(response.status == 200)
            let state = try jsonObject(response.body)
            let summary = try jsonObject(Array(summaryLine.utf8))
            #expect(state["scan"] as? String == "finished")
            for field in ["total", "completed", "resumed", "failed", "not_run", "reruns", "busy", "seconds", "interrupted", "systems"] {
                #expect(state[field] != nil && sameJSON(state[field], summary[field]), "\(field): \(state[field] ?? "none") vs \(summary[field] ?? "none")")
            }
            #expect(sameJSON(state["summary"], summary))
            #expect(summary["completed"] as? Int == 40)
            // The final picture keeps every system's slots (the peers left Systems after the scan).
            let rows = (state["cluster"] as? [[String: Any]]) ?? []
            #expect(rows.map { "\($0["name"] ?? "?") \($0["capacity"] ?? "?")/\($0["running"] ?? "?")" } == ["local 4/0", "node1 4/0", "node2 4/0"])
            let page = try await dashboardGet(port: port, "/")
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)

            let clock = ContinuousClock(), signalled = clock.now
            scan.send(SIGINT)
            let run = try await scan.finish(timeout: .seconds(25))
            #expect(run.status == 0, "\(run.stderr)")
            // The tasks were over: the signal ends the linger, and no task is said to stop.
            #expect(!run.stderr.contains("Stopping"), "\(run.stderr)")
            #expect(clock.now - signalled < .seconds(10))
            // Nothing listens there any more.
            let after = try? await dashboardGet(port: port, "/state")
            #expect(after == nil, "still served after the exit")
        }

        @Test(arguments: ["abc", "70000", ":", "-1", "127.0.0.1:", "host:port"])
        func aBadDashboardAddressIsAUsageError(_ value: String) async throws {
            let run = try await runSkynet(["scan", "--total", "1", "--duration", "0", "--dashboard", value])
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: option '--dashboard' wants [HOST:]PORT"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }

        @Test func aLingerWithoutADashboardIsAUsageError() async throws {
            let run = try await runSkynet(["scan", "--total", "1", "--duration", "0", "--dashboard-linger", "5"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: --dashboard-linger"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }

        /// The port is taken: exit 2 naming --dashboard, and the node spawned before it stopped.
        @Test func aDashboardPortInUseIsAnErrorAndLeavesNoNodeRunning() async throws {
            let taken = try Socket.listen(host: "127.0.0.1", port: 0)
            defer { taken.close() }
            let port = try taken.localAddress().port
            // A --failing-every no other test uses marks this scan's spawned nodes in /proc.
            let marker = "987653"
            let run = try await runSkynet(["scan", "--total", "5", "--duration", "0", "--spawn", "2",
                                           "--failing-every", marker, "--dashboard", String(port)], limit: .seconds(60))
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: --dashboard 127.0.0.1:\(port)"), "\(run.stderr)")
            #expect(run.stderr.contains("in use"), "\(run.stderr)")
            #expect(!run.stdout.contains("Completed"))
            let left = processes { $0.contains(" node ") && $0.contains(marker) }
            #expect(try await allGone(left, within: .seconds(5)), "nodes left running: \(left)")
        }

        @Test func scanHelpMentionsTheDashboardOptions() async throws {
            let run = try await runSkynet(["scan", "--help"])
            #expect(run.status == 0)
            let help = run.stdout + run.stderr
            #expect(help.contains("--dashboard [HOST:]PORT"))
            #expect(help.contains("--dashboard-linger S"))
        }
    }
}

/// A response of the dashboard: status, headers (names lowercased), body.
struct DashboardResponse: Sendable {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]
}

/// `GET path` from 127.0.0.1:`port`, read to the end (the server closes after one answer).
func dashboardGet(port: Int, _ path: String) async throws -> DashboardResponse {
    let bytes = try await onOwnThread(named: "test-dashboard-get") { () throws -> [UInt8] in
        let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
        defer { socket.close() }
        _ = try socket.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8), wait: true)
        socket.setReceiveTimeout(.seconds(20))
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while bytes.count < 16 << 20, let count = try? socket.receive(into: chunk), count > 0 { bytes += chunk[..<count] }
        return bytes
    }
    let text = String(decoding: bytes, as: UTF8.self)
    guard let end = text.range(of: "\r\n\r\n") else { throw DashboardResponseError(text: text) }
    let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
    guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { throw DashboardResponseError(text: text) }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return DashboardResponse(status: status, headers: headers, body: Array(text[end.upperBound...].utf8))
}

struct DashboardResponseError: Error, CustomStringConvertible {
    let text: String
    var description: String { "not an HTTP response: \(text)" }
}

/// A JSON object, parsed.
func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], "not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
}

/// Whether two parsed JSON values are the same (compared as canonical JSON text).
func sameJSON(_ a: Any?, _ b: Any?) -> Bool {
    guard let a, let b,
          let left = try? JSONSerialization.data(withJSONObject: [a], options: .sortedKeys),
          let right = try? JSONSerialization.data(withJSONObject: [b], options: .sortedKeys) else { return false }
    return left == right
}

/// The pids of the processes whose command line (joined by spaces) satisfies `predicate`.
func processes(where predicate: (String) -> Bool) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { predicate(ProcInfo.commandLine(of: $0).joined(separator: " ")) }
}
