import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A real dashboard on 127.0.0.1:0: the page, `/state`, the `/events` stream and its rate,
/// and the methods it takes.
@Suite(.timeLimit(.minutes(2)))
struct DashboardServerTests {
    /// The page must work on a machine without internet: nothing it loads comes from elsewhere.
    @Test func thePageIsOneSelfContainedHTMLDocument() async throws {
        try await withDashboard { dashboard in
            let page = try await HTTPClientForTests.get(dashboard, "/")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            let html = page.text
            #expect(html.lowercased().hasPrefix("<!doctype html>"))
            #expect(html.contains("</html>"))
            #expect(!html.contains("http://") && !html.contains("https://"))
            // No reference to another origin, with or without a scheme (`//cdn…`).
            let external = try Regex(#"(src|href|action)\s*=\s*["']?\s*(//|[a-z][a-z0-9+.-]*:)"#).ignoresCase()
            #expect(html.firstMatch(of: external) == nil)
            #expect(html.firstMatch(of: try Regex(#"@import|url\(\s*["']?\s*(//|[a-z]+:)"#).ignoresCase()) == nil)
            #expect(html.contains("/events") && html.contains("/state"))
        }
    }

    @Test func stateIsTheBoardAsJSON() async throws {
        let board = dashboardTestBoard()
        board.record(.started(ScanTask(input: 3, duration: 0), system: "alpha", isLocal: false, attempt: 1))
        board.record(.completed(ScanTask(input: 3, duration: 0), result: "ok", system: "alpha", isLocal: false, attempt: 1, seconds: 0.2))
        try await withDashboard(board: board) { dashboard in
            let response = try await HTTPClientForTests.get(dashboard, "/state")
            #expect(response.status == 200 && response.headers["content-type"] == "application/json")
            let state = try parse(response.body)
            #expect(state["scan"] as? String == "running")
            #expect(state["total"] as? Int == 10 && state["completed"] as? Int == 1)
            #expect(try objects(state, "cluster").compactMap { $0["name"] as? String } == ["local", "alpha"])
        }
    }

    /// The first frame is the latest snapshot, `event: state`; what the board records later
    /// reaches the client in a following frame.
    @Test func theStreamStartsWithTheStateAndCarriesNewBars() async throws {
        let board = dashboardTestBoard()
        try await withDashboard(board: board) { dashboard in
            let socket = try await EventStreamReader.open(dashboard.server)
            defer { socket.close() }
            let first = try await EventStreamReader.read(socket) { !$0.isEmpty }
            let frame = try #require(first.frames.first)
            #expect(frame.event == "state")
            let state = try parse(Array(frame.data.utf8))
            #expect(state["total"] as? Int == 10 && state["scan"] as? String == "running")
            #expect(state["spans"] is [Any] && state["running"] is [Any] && state["frame"] is Int)

            board.record(.started(ScanTask(input: 42, duration: 0), system: "local", isLocal: true, attempt: 1))
            board.record(.completed(ScanTask(input: 42, duration: 0), result: "ok", system: "local", isLocal: true, attempt: 1, seconds: 0))
            let later = try await EventStreamReader.read(socket) { frames in
                frames.contains { $0.data.contains(#""sector":42"#) }
            }
            let carrying = try #require(later.frames.first { $0.data.contains(#""sector":42"#) })
            #expect(carrying.event == "state")
            let spans = try objects(parse(Array(carrying.data.utf8)), "spans")
            #expect(spans.contains { $0["sector"] as? Int == 42 && $0["outcome"] as? String == "done" })
            #expect(later.comments.isEmpty, "\(later.comments)")
        }
    }

    /// One frame a tenth of a second at most, however busy the board: counted over two seconds
    /// while events pour in.
    @Test func framesArriveAtMostTenASecond() async throws {
        let board = dashboardTestBoard()
        try await withDashboard(board: board) { dashboard in
            let socket = try await EventStreamReader.open(dashboard.server)
            defer { socket.close() }
            _ = try await EventStreamReader.read(socket) { !$0.isEmpty }
            // The feeder never suspends: on a thread of its own, not one of the pool's two.
            let stopFeeding = Flag()
            startThread(named: "test-feed") {
                var sector = 0
                while !stopFeeding.isSet {
                    board.record(.started(ScanTask(input: sector, duration: 0), system: "local", isLocal: true, attempt: 1))
                    board.record(.completed(ScanTask(input: sector, duration: 0), result: "ok", system: "local", isLocal: true, attempt: 1, seconds: 0))
                    sector += 1
                    if sector.isMultiple(of: 100) { sleepOnThisThread(for: .milliseconds(1)) }
                }
            }
            defer { stopFeeding.set() }
            let clock = ContinuousClock()
            let end = clock.now + .seconds(2)
            let bytes = try await onOwnThread(named: "test-dashboard-rate") {
                HTTPClientForTests.read(socket, silence: .seconds(10)) { _ in clock.now >= end }
            }
            stopFeeding.set()
            let frames = EventStreamReader.frames(bytes).frames
            #expect(frames.count <= 30, "\(frames.count) frames in about 2 s")
            #expect(frames.allSatisfy { $0.event == "state" })
            // And they keep coming (on a loaded machine the 2 s may have held only one).
            let more = try await EventStreamReader.read(socket) { $0.count >= 2 }
            #expect(more.frames.count >= 2)
        }
    }

    @Test func theFinalStateIsServedOnceTheScanHasEnded() async throws {
        let board = dashboardTestBoard()
        try await withDashboard(board: board) { dashboard in
            var summary = JSONLine()
            summary.add("event", "summary")
            board.finish(ScanReport(total: 10), summary: summary)
            dashboard.publishNow()
            let socket = try await EventStreamReader.open(dashboard.server)
            defer { socket.close() }
            let first = try await EventStreamReader.read(socket) { !$0.isEmpty }
            let state = try parse(Array(try #require(first.frames.first).data.utf8))
            #expect(state["scan"] as? String == "finished")
            #expect((state["finished"] as? [String: Any])?["how"] as? String == "completed")
            #expect(try parse(try await HTTPClientForTests.get(dashboard, "/state").body)["scan"] as? String == "finished")
        }
    }

    @Test func headIsAnsweredAndOtherMethodsAre405() async throws {
        try await withDashboard { dashboard in
            let host = "Host: 127.0.0.1:\(dashboard.port)\r\n"
            for path in ["/", "/state"] {
                let get = try await HTTPClientForTests.get(dashboard.server, "GET \(path) HTTP/1.1\r\n\(host)\r\n")
                let head = try await HTTPClientForTests.get(dashboard.server, "HEAD \(path) HTTP/1.1\r\n\(host)\r\n")
                #expect(head.status == 200 && head.body.isEmpty, "\(path)")
                #expect(head.headers["content-type"] == get.headers["content-type"], "\(path)")
                #expect(path == "/state" || head.headers["content-length"] == String(get.body.count))
            }
            for request in ["POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", "POST /login HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                            "DELETE /state HTTP/1.1\r\n\r\n", "PUT /events HTTP/1.1\r\nContent-Length: 0\r\n\r\n"] {
                let response = try await HTTPClientForTests.get(dashboard.server, request)
                #expect(response.status == 405, "\(request)")
                #expect(response.headers["allow"] == "GET, HEAD")
            }
            #expect(try await HTTPClientForTests.get(dashboard, "/favicon.ico").status == 404)
        }
    }
}
