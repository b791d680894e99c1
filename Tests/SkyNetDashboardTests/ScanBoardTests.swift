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

/// The dashboard's model, fed events by hand and read as JSON: lanes, bars and their
/// outcomes, caps, cluster states, tallies, and the end of a scan.
@Suite(.timeLimit(.minutes(3)), .onOwnThread)
struct ScanBoardTests {
    @Test func concurrentStartsTakeTheLowestFreeLanesAndAFreedLaneIsReused() throws {
        let board = makeBoard()
        for sector in 0..<3 { board.record(.started(task(sector), system: "local", isLocal: true, attempt: 1)) }
        board.record(.started(task(10), system: "alpha", isLocal: false, attempt: 1))
        var lanes = try runningLanes(board.frame())
        #expect(lanes == [0: "local/0", 1: "local/1", 2: "local/2", 10: "alpha/0"])
        // Lane 1 frees: the next start takes it, not lane 3.
        board.record(.completed(task(1), result: "ok", system: "local", isLocal: true, attempt: 1, seconds: 0.1))
        board.record(.started(task(3), system: "local", isLocal: true, attempt: 1))
        let frame = try parse(board.frame())
        lanes = try runningLanes(frame)
        #expect(lanes == [0: "local/0", 2: "local/2", 3: "local/1", 10: "alpha/0"])
        let spans = try objects(frame, "spans")
        #expect(spans.count == 1)
        #expect(spans.first?["lane"] as? Int == 1 && spans.first?["sector"] as? Int == 1 && spans.first?["system"] as? String == "local")
        let local = try #require(try objects(frame, "cluster").first { $0["name"] as? String == "local" })
        #expect(local["lanes"] as? Int == 3)
    }

    @Test func spansCarryTheirOutcomeAndFinishCancelsWhatStillRuns() throws {
        let board = makeBoard()
        for sector in 1...4 { board.record(.started(task(sector), system: "alpha", isLocal: false, attempt: 1)) }
        board.record(.completed(task(1), result: "ok", system: "alpha", isLocal: false, attempt: 1, seconds: 0.1))
        board.record(.rerun(task(2), attempt: 1, system: "alpha", error: TestFailure("flaky")))
        board.record(.gaveUp(task(3), attempts: 1, system: "alpha", seconds: 0.1, error: TestFailure("broken")))
        board.finish(report(total: 4), summary: JSONLine())
        let frame = try parse(board.frame())
        let outcomes = Dictionary(uniqueKeysWithValues: try objects(frame, "spans").map {
            ($0["sector"] as? Int ?? -1, $0["outcome"] as? String ?? "?")
        })
        #expect(outcomes == [1: "done", 2: "re-run", 3: "failed", 4: "cancelled"])
        #expect(try objects(frame, "running").isEmpty)
        for span in try objects(frame, "spans") {
            let start = try #require(span["start"] as? Int), end = try #require(span["end"] as? Int)
            #expect(0 <= start && start <= end)
        }
    }

    /// A `busy` answer sends the task back: it starts again (here on another system) without
    /// an end, and the lane of the first start must be free again.
    @Test func aBusyBounceFreesTheFirstLane() throws {
        let board = makeBoard()
        board.record(.started(task(1), system: "local", isLocal: true, attempt: 1))
        board.record(.started(task(1), system: "alpha", isLocal: false, attempt: 1))
        board.record(.started(task(2), system: "local", isLocal: true, attempt: 1))
        let frame = try parse(board.frame())
        #expect(try runningLanes(frame) == [1: "alpha/0", 2: "local/0"])
        #expect(try objects(frame, "spans").isEmpty)  // a bounce is not a bar
    }

    /// Bars one after the other with alternating outcomes, so that none merges with the last.
    static func recordAlternating(_ sectors: Range<Int>, on board: ScanBoard) {
        for sector in sectors {
            board.record(.started(task(sector), system: "local", isLocal: true, attempt: 1))
            if sector.isMultiple(of: 2) {
                board.record(.completed(task(sector), result: "ok", system: "local", isLocal: true, attempt: 1, seconds: 0))
            } else {
                board.record(.rerun(task(sector), attempt: 1, system: "local", error: TestFailure("flaky")))
            }
        }
    }

    @Test func spansPerFrameAreCappedNewestKeptAndClearedAfterTheFrame() throws {
        let board = makeBoard()
        Self.recordAlternating(0..<1000, on: board)
        let first = try parse(board.frame())
        let spans = try objects(first, "spans")
        #expect(spans.count == ScanBoard.maxSpansPerFrame)
        #expect(spans.compactMap { $0["sector"] as? Int } == Array(750..<1000))
        #expect(first["spans_omitted"] as? Int == 750)
        let second = try parse(board.frame())
        #expect(try objects(second, "spans").isEmpty)
        #expect(second["spans_omitted"] as? Int == 0)
        // A few after the frame are all in the next one, none omitted.
        Self.recordAlternating(1000..<1010, on: board)
        let third = try parse(board.frame())
        #expect(try objects(third, "spans").compactMap { $0["sector"] as? Int } == Array(1000..<1010))
        #expect(third["spans_omitted"] as? Int == 0)
    }

    /// Tiny attempts back to back on one row with one outcome become one bar that counts them;
    /// a gap, a long attempt, another outcome or another row starts a new bar.
    @Test func tinyAttemptsBackToBackOnOneRowAreOneBar() {
        func bar(_ lane: Int, _ start: Int, _ end: Int, _ outcome: ScanBoard.Outcome = .done, system: String = "local") -> ScanBoard.Span {
            ScanBoard.Span(system: system, lane: lane, start: start, end: end, outcome: outcome, sector: start, attempt: 1)
        }
        let tiny = ScanBoard.tinyMilliseconds
        let bars = [
            bar(0, 0, 1), bar(0, 1, 2), bar(1, 0, 3), bar(0, 2, 4),     // lane 0: three tiny in a row
            bar(0, 4 + tiny, 5 + tiny),                                 // a gap of `tiny`: a new bar
            bar(0, 5 + tiny, 6 + tiny, .rerun),                         // another outcome: a new bar
            bar(0, 6 + tiny, 6 + 3 * tiny),                             // a long one: its own bar
            bar(0, 6 + 3 * tiny, 7 + 3 * tiny),                         // tiny after a long one: its own
            bar(1, 3, 4, system: "alpha"),                              // another system's lane 1
        ]
        let merged = ScanBoard.coalesce(bars)
        #expect(merged.map { [$0.lane, $0.start, $0.end, $0.count] } == [
            [0, 0, 4, 3], [1, 0, 3, 1], [0, 4 + tiny, 5 + tiny, 1], [0, 5 + tiny, 6 + tiny, 1],
            [0, 6 + tiny, 6 + 3 * tiny, 1], [0, 6 + 3 * tiny, 7 + 3 * tiny, 1], [1, 3, 4, 1],
        ])
        #expect(merged.map(\.system).last == "alpha")
        // Through the board: a thousand instant tasks on one slot leave one bar counting them all.
        let board = makeBoard()
        for sector in 0..<1000 {
            board.record(.started(task(sector), system: "local", isLocal: true, attempt: 1))
            board.record(.completed(task(sector), result: "ok", system: "local", isLocal: true, attempt: 1, seconds: 0))
        }
        let spans = (try? objects(try parse(board.frame()), "spans")) ?? []
        #expect(spans.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 1000)
        #expect(spans.count < 10, "\(spans.count) bars")
    }

    @Test func failuresAreTheNewestTwentyNewestFirstWithTheirErrorCut() throws {
        let board = makeBoard()
        for sector in 0..<30 {
            board.record(.started(task(sector), system: "alpha", isLocal: false, attempt: 1))
            let error = TestFailure("E\(sector) " + String(repeating: "x", count: 1000))
            if sector.isMultiple(of: 2) {
                board.record(.rerun(task(sector), attempt: 1, system: "alpha", error: error))
            } else {
                board.record(.gaveUp(task(sector), attempts: 1, system: "alpha", seconds: 0, error: error))
            }
        }
        board.record(.started(task(99), system: "alpha", isLocal: false, attempt: 1))
        board.record(.rerun(task(99), attempt: 1, system: "alpha", error: TestFailure("short")))
        let failures = try objects(parse(board.currentState()), "failures")
        #expect(failures.count == ScanBoard.maxFailures)
        #expect(failures.compactMap { $0["sector"] as? Int } == [99] + Array((11..<30).reversed()))
        #expect(failures[0]["error"] as? String == "short")
        #expect(failures[0]["gave_up"] as? Bool == false && failures[1]["gave_up"] as? Bool == true)
        for failure in failures.dropFirst() {
            let error = try #require(failure["error"] as? String)
            #expect(error.hasPrefix("E\(failure["sector"] as? Int ?? -1) "))
            #expect(error.utf8.count == ScanBoard.maxErrorBytes + "…".utf8.count, "\(error.utf8.count)")
            #expect(error.hasSuffix("…"))
        }
    }

    /// Completions over 1,000 seconds (fed to the history's own bookkeeping: the board's clock
    /// is real) keep the last 300 seconds only.
    @Test func perSecondHistoryIsBoundedTo300Seconds() throws {
        let board = makeBoard()
        board.state.withLock { state in
            for second in 0..<1000 {
                for _ in 0..<(second % 3 + 1) { state.countCompletion(atSecond: second) }
            }
        }
        let frame = try parse(board.frame())
        let history = try #require(frame["per_second"] as? [Int])
        #expect(history.count == ScanBoard.historySeconds)
        #expect(frame["history_start"] as? Int == 700)
        #expect(history == (700..<1000).map { $0 % 3 + 1 })
        // A long silence: the history moves on and stays bounded.
        board.state.withLock { $0.countCompletion(atSecond: 5000) }
        let later = try parse(board.currentState())
        #expect((later["per_second"] as? [Int])?.count == ScanBoard.historySeconds)
        #expect((later["per_second"] as? [Int])?.last == 1)
        #expect(later["history_start"] as? Int == 5000 - ScanBoard.historySeconds + 1)
    }

    @Test func clusterEventsSetEachSystemsState() throws {
        let names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
        let board = ScanBoard(total: 10, systems: [.init(name: "local", address: "this process", isLocal: true)]
                              + names.map { .init(name: $0, address: "127.0.0.1:1") })
        var states = try systemRows(board.currentState())
        #expect(states["local"]?.state == "local")
        #expect(names.allSatisfy { states[$0]?.state == "connecting" })
        board.record(.connected("alpha", link: .plain))
        board.record(.unresponsive("beta"))
        board.record(.disconnected("gamma", reason: "connection reset by peer"))
        board.record(.unauthorized("delta", reason: "it did not prove the token"))
        board.record(.refused("epsilon", code: "unauthorized", message: "no"))
        board.record(.refused("zeta", code: "unsupported-version", message: "no"))
        board.record(.lacksJob("eta", job: "render", jobs: ["scan"]))
        board.record(.unresponsive("theta"))
        board.record(.responsive("theta"))
        states = try systemRows(board.currentState())
        #expect(states["alpha"]?.state == "connected")
        #expect(states["beta"]?.state == "unresponsive")
        #expect(states["gamma"]?.state == "gone" && states["gamma"]?.detail == "connection reset by peer")
        #expect(states["delta"]?.state == "unauthorized" && states["delta"]?.detail == "it did not prove the token")
        #expect(states["epsilon"]?.state == "unauthorized" && states["epsilon"]?.detail.isEmpty == false)
        #expect(states["zeta"]?.state == "refused" && states["zeta"]?.detail.isEmpty == false)
        #expect(states["eta"]?.state == "lacks job" && states["eta"]?.detail.isEmpty == false)
        #expect(states["theta"]?.state == "connected" && states["theta"]?.detail == "")
        // A peer that comes back is connected again, its old reason gone.
        board.record(.connected("gamma", link: .plain))
        #expect(try systemRows(board.currentState())["gamma"].map { [$0.state, $0.detail] } == ["connected", ""])
    }

    @Test func liveTalliesCountWhileTheScanRuns() throws {
        let board = makeBoard()
        board.update([SlotUse(name: "local", capacity: 2, inFlight: 1, suspended: false),
                      SlotUse(name: "alpha", capacity: 4, inFlight: 3, suspended: false)])
        for sector in 0..<6 { board.record(.started(task(sector), system: sector < 3 ? "local" : "alpha", isLocal: sector < 3, attempt: 1)) }
        for sector in [0, 1, 3] {
            board.record(.completed(task(sector), result: "ok", system: sector < 3 ? "local" : "alpha", isLocal: sector < 3, attempt: 1, seconds: 0.5))
        }
        board.record(.rerun(task(4), attempt: 1, system: "alpha", error: TestFailure("flaky")))
        board.record(.started(task(4), system: "local", isLocal: true, attempt: 2))
        board.record(.gaveUp(task(5), attempts: 1, system: "alpha", seconds: 0.1, error: TestFailure("broken")))
        let state = try parse(board.currentState())
        #expect(state["scan"] as? String == "running")
        #expect(state["finished"] is NSNull)
        #expect(state["total"] as? Int == 10 && state["completed"] as? Int == 3)
        #expect(state["failed"] as? Int == 1 && state["reruns"] as? Int == 1 && state["not_run"] as? Int == 6)
        let systems = try #require(state["systems"] as? [String: [String: Any]])
        #expect(systems["local"]?["completed"] as? Int == 2 && systems["local"]?["reruns"] as? Int == 1)
        #expect(systems["alpha"]?["completed"] as? Int == 1 && systems["alpha"]?["failed"] as? Int == 2)
        let rows = try objects(state, "cluster")
        let alpha = try #require(rows.first { $0["name"] as? String == "alpha" })
        #expect(alpha["capacity"] as? Int == 4 && alpha["running"] as? Int == 3)
        #expect(alpha["completed"] as? Int == 1 && alpha["failed"] as? Int == 2 && alpha["mean_seconds"] as? Double == 0.5)
        // /state carries the recent bars, for a page opened late.
        #expect(try objects(state, "spans").compactMap { $0["sector"] as? Int }.sorted() == [0, 1, 3, 4, 5])
    }

    @Test(arguments: [("completed", false, 0), ("failed", false, 2), ("stopped", true, 0)])
    func finishPutsTheSummaryAtTopLevelAndSaysHowItEnded(_ how: String, interrupted: Bool, gaveUp: Int) async throws {
        let board = ScanBoard(total: 20, resumed: 3, systems: [.init(name: "local", address: "this process", isLocal: true)])
        board.record(.started(task(7), system: "local", isLocal: true, attempt: 1))
        var report = report(total: 20)
        report.systems["local"] = SystemTally(completed: interrupted ? 5 : 20 - gaveUp, failed: gaveUp + 1, reruns: 1, busy: 2, busySeconds: 3)
        report.systems["alpha"] = SystemTally(completed: 0, failed: 0, reruns: 0, busy: 1, busySeconds: 0)
        report.gaveUp = gaveUp
        report.reruns = 1
        report.busyBounces = 3
        report.seconds = 1.25
        report.interrupted = interrupted
        var summary = JSONLine()
        summary.add("event", "summary")
        report.addSummary(to: &summary, resumed: 3)
        summary.add("time", "2026-01-01T00:00:00Z")
        board.update([SlotUse(name: "local", capacity: 4, inFlight: 4, suspended: false)])
        board.finish(report, summary: summary)
        board.update([SlotUse(name: "local", capacity: 4, inFlight: 2, suspended: false)])  // after the end: ignored
        #expect(board.isFinished)

        let state = try parse(board.currentState())
        let expected = try parse(summary.object)
        #expect(state["scan"] as? String == "finished")
        for field in ["total", "completed", "resumed", "failed", "not_run", "reruns", "busy", "seconds", "interrupted", "systems"] {
            #expect(state[field] != nil && jsonEqual(state[field], expected[field]), "\(field)")
        }
        #expect(jsonEqual(state["summary"], expected))
        #expect(String(decoding: board.currentState(), as: UTF8.self).contains(#""summary":"# + String(decoding: summary.object, as: UTF8.self)))
        let finished = try #require(state["finished"] as? [String: Any])
        #expect(finished["how"] as? String == how)
        #expect((finished["message"] as? String)?.isEmpty == false)
        #expect(state["eta_seconds"] is NSNull)
        let local = try #require(try objects(state, "cluster").first { $0["name"] as? String == "local" })
        #expect(local["running"] as? Int == 0 && local["capacity"] as? Int == 4)
        #expect(try objects(parse(board.frame()), "spans").first?["outcome"] as? String == "cancelled")

        // The dashboard's clock stops at the end: let the real one move on, then look again.
        let elapsed = try #require(state["elapsed"] as? Double)
        let deadline = ContinuousClock.now + .seconds(10)
        while board.now < Int(elapsed * 1000) + 30, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let later = try parse(board.currentState())
        #expect(later["elapsed"] as? Double == elapsed)
        #expect(jsonEqual(later["summary"], expected))
    }

    /// A million events without a single frame read in between: the board keeps only bounded
    /// state, and the next frame stays small.
    @Test func aMillionEventsKeepTheFrameSmall() throws {
        let board = makeBoard()
        var events = 0
        var sector = 0
        let error = TestFailure(String(repeating: "e", count: 2000))
        while events < 1_000_000 {
            let system = sector.isMultiple(of: 2) ? "local" : "alpha"
            let task = task(sector)
            board.record(.started(task, system: system, isLocal: system == "local", attempt: 1))
            if sector.isMultiple(of: 7) {
                board.record(.rerun(task, attempt: 1, system: system, error: error))
                board.record(.started(task, system: "alpha", isLocal: false, attempt: 2))
                events += 2
            }
            board.record(.completed(task, result: "ok", system: system, isLocal: false, attempt: 1, seconds: 0.001))
            events += 2
            sector += 1
        }
        let held = board.state.withLock { ($0.spans.count, $0.failures.count, $0.running.count, $0.perSecond.count) }
        #expect(held.0 < ScanBoard.maxSpansBuffered && held.1 == ScanBoard.maxFailures && held.2 == 0)
        #expect(held.3 <= ScanBoard.historySeconds)
        let frame = board.frame()
        #expect(frame.count < 100_000, "\(frame.count) bytes")
        let parsed = try parse(frame)
        #expect(parsed["completed"] as? Int == sector)
        #expect(try objects(parsed, "spans").count == ScanBoard.maxSpansPerFrame)
        // At most `recentSpans` bars of about a hundred bytes each.
        #expect(board.currentState().count < 300_000)
    }

    // MARK: - Helpers

    func makeBoard() -> ScanBoard {
        ScanBoard(total: 10, systems: [.init(name: "local", address: "this process", isLocal: true),
                                       .init(name: "alpha", address: "127.0.0.1:9001")])
    }

    static func task(_ sector: Int) -> ScanTask { ScanTask(input: sector, duration: 0) }
    func task(_ sector: Int) -> ScanTask { Self.task(sector) }

    func report(total: Int) -> ScanReport { ScanReport(total: total) }
}




/// The frame's running attempts: sector → "system/lane".
func runningLanes(_ frame: [UInt8]) throws -> [Int: String] { try runningLanes(parse(frame)) }

func runningLanes(_ frame: [String: Any]) throws -> [Int: String] {
    var lanes: [Int: String] = [:]
    for bar in try objects(frame, "running") {
        lanes[try #require(bar["sector"] as? Int)] = "\(bar["system"] as? String ?? "?")/\(bar["lane"] as? Int ?? -1)"
    }
    return lanes
}

/// The cluster rows by name: state and detail.
func systemRows(_ state: [UInt8]) throws -> [String: (state: String, detail: String)] {
    var rows: [String: (state: String, detail: String)] = [:]
    for row in try objects(parse(state), "cluster") {
        rows[row["name"] as? String ?? "?"] = (row["state"] as? String ?? "?", row["detail"] as? String ?? "?")
    }
    return rows
}
