import SkyNetCluster
import SkyNetRuntime
import SkyNetScheduler
import SkyNetWire

extension ScanBoard {
    /// The data of the next `/events` frame: the whole state, and the attempts that ended
    /// since the previous frame, tiny ones merged (at most `maxSpansPerFrame` bars, the
    /// newest; the page keeps the history of its task stream itself).
    package func frame() -> [UInt8] {
        let time = now
        // Under the lock only what must be: the scan's events wait on it. The copy of the
        // state is cheap (its arrays are shared until the next event writes to them) and the
        // JSON is made from it afterwards.
        let (snapshot, ended, omitted) = state.withLock { state -> (State, [Span], Int) in
            state.frames += 1
            state.advance(to: state.ending?.time ?? time)
            let ended = state.spans, omitted = state.spansOmitted
            state.spans = []
            state.spansOmitted = 0
            return (state, ended, omitted)
        }
        let bars = Self.coalesce(ended)
        let spans = bars.suffix(Self.maxSpansPerFrame)
        return Self.encode(snapshot, at: time, spans: Array(spans), omitted: omitted + bars.count - spans.count)
    }

    /// The body of `GET /state`: the same state, with the last `recentSpans` bars of the task
    /// stream as `spans` (a page opened late starts from them). At the end
    /// of a scan its summary fields are exactly those of the `--json` summary event, which it
    /// also holds whole as `summary`. Reading it changes nothing (the rate and the ETA move
    /// with the frames), and the lock is held only to copy the state.
    package func currentState() -> [UInt8] {
        let time = now
        let snapshot = state.withLock { $0 }
        let recent = Self.coalesce(Array(snapshot.recent[snapshot.recentStart...] + snapshot.recent[..<snapshot.recentStart]))
        return Self.encode(snapshot, at: time, spans: recent, omitted: 0)
    }

    private static func encode(_ state: State, at now: Int, spans: [Span], omitted: Int) -> [UInt8] {
        var state = state
        let time = state.ending?.time ?? now
        let seconds = Double(time) / 1000
        if state.ending == nil {
            state.report.seconds = seconds
            state.advanceHistory(to: time / 1000)
        }
        var json = JSONLine()
        json.add("scan", state.ending == nil ? "running" : "finished")
        state.report.addSummary(to: &json, resumed: state.resumed)
        json.add("elapsed", seconds)
        json.add("frame", state.frames)
        // While running, the rate of the last few seconds; at the end, over the whole scan.
        let rate = state.ending == nil ? state.rate
            : state.report.seconds > 0 ? Double(state.report.completed) / state.report.seconds : nil
        if let rate { json.add("rate", rate) } else { json.addNull("rate") }
        if state.ending == nil, let left = state.eta.secondsLeft(total: state.report.total, at: seconds) {
            json.add("eta_seconds", left)
        } else {
            json.addNull("eta_seconds")
        }
        json.add("cluster", objects: state.rows.map { row in
            var system = JSONLine()
            let tally = state.report.systems[row.system.name] ?? SystemTally()
            system.add("name", row.system.name)
            system.add("address", row.system.address)
            if let link = row.link { system.add("link", link.rawValue) } else { system.addNull("link") }
            system.add("state", row.state.rawValue)
            system.add("detail", row.detail)
            system.add("capacity", row.slots.capacity)
            system.add("running", row.slots.inFlight)
            system.add("lanes", max(row.slots.capacity, row.lanes.count))
            system.add("completed", tally.completed)
            system.add("failed", tally.failed)
            system.add("mean_seconds", tally.meanSeconds)
            return system
        })
        json.add("spans", objects: spans.map { span in
            var bar = JSONLine()
            bar.add("system", span.system)
            bar.add("lane", span.lane)
            bar.add("start", span.start)
            bar.add("end", span.end)
            bar.add("outcome", span.outcome.rawValue)
            bar.add("sector", span.sector)
            bar.add("attempt", span.attempt)
            bar.add("count", span.count)
            return bar
        })
        json.add("spans_omitted", omitted)
        // Running attempts are open bars; a huge cluster shows its first ones only.
        json.add("running", objects: state.running.prefix(2000).map { sector, running in
            var bar = JSONLine()
            bar.add("system", running.system)
            bar.add("lane", running.lane)
            bar.add("start", running.start)
            bar.add("sector", sector)
            return bar
        })
        json.add("history_start", state.historyStart)
        json.add("per_second", integers: state.perSecond)
        json.add("failures", objects: state.failures.reversed().map { failure in
            var line = JSONLine()
            line.add("time", failure.time)
            line.add("sector", failure.sector)
            line.add("system", failure.system)
            line.add("attempt", failure.attempt)
            line.add("error", failure.error)
            line.add("gave_up", failure.gaveUp)
            return line
        })
        if let ending = state.ending {
            var end = JSONLine()
            end.add("how", ending.how)
            end.add("message", ending.message)
            json.add("finished", object: end)
            json.add("summary", object: ending.summary)
        } else {
            json.addNull("finished")
        }
        return json.object
    }
}

extension ScanBoard.State {
    /// Brings what moves with time up to `time` (ms): the ETA's samples, the rate over the
    /// last `rateWindow` seconds of frames, the throughput history. Frames call it, not readers.
    mutating func advance(to time: Int) {
        let seconds = Double(time) / 1000
        let finished = report.completed + report.gaveUp
        eta.observe(finished: finished, at: seconds)
        advanceHistory(to: time / 1000)
        rateSamples.append((seconds, finished))
        while let first = rateSamples.first, rateSamples.count > 2, seconds - first.0 > ScanBoard.rateWindow || rateSamples.count > 100 {
            rateSamples.removeFirst()
        }
        if let first = rateSamples.first, seconds - first.0 >= 0.05 {
            rate = Double(finished - first.1) / (seconds - first.0)
        }
    }
}
