import Foundation
import SkyNet

/// What a scan prints: the reference log lines, or (`--json`) one JSON event per line.
/// Every completed sector is journaled before it is printed.
///
/// Lines go through the console's queue (`Console.writer`): when stdout stalls, the event
/// methods suspend, and with them the coordinator or the link that called them. Every JSON
/// event carries `time`, the seconds since the output was opened, stamped when the event is
/// made (before it waits for room in the queue).
final class ScanOutput: Sendable {
    enum Format: Sendable { case text, json }

    let format: Format
    /// Where each sector's outcome is recorded (and, with `--results`, what reached stdout).
    let journal: ScanJournal?
    private let journalFailed = Locked(false)
    let progress: Progress?
    private let started = ContinuousClock.now
    /// Closed when the summary is about to be queued: no cluster event may follow it.
    private let peerEventsOpen = Locked(true)
    /// With --results: results go to stdout (in input order when it has an order), the log
    /// lines to stderr.
    let results: ResultOrder?
    /// Where log lines go: stdout, or stderr when stdout carries the results.
    private var logDescriptor: Int32 { results == nil ? 1 : 2 }

    init(format: Format, journal: ScanJournal?, progress: Progress?, results: ResultOrder? = nil) {
        self.format = format
        self.journal = journal
        self.progress = progress
        self.results = results
    }

    /// Stops the progress line for good (on every path out of a scan).
    func close() async {
        await progress?.stop()
    }

    /// An error line on stderr, with the progress line out of the way.
    func error(_ message: String) async {
        await Console.writer.write((progress == nil ? "" : Progress.clear) + "error: \(message)\n", to: 2)
    }

    /// Whether a journal write failed (the scan then exits 1: its journal is incomplete).
    var journalIncomplete: Bool { journalFailed.withLock { $0 } }

    func resumed(_ count: Int, from path: String, skipped: Int) async {
        switch format {
        case .text:
            await line("Resumed: \(count) sectors from \(path)" + (skipped > 0 ? " (\(skipped) unreadable lines skipped)" : ""))
        case .json:
            var json = event("resumed")
            json.add("sectors", count)
            json.add("journal", path)
            json.add("skipped", skipped)
            await emit(json)
        }
    }

    func cluster(_ event: ClusterEvent) async {
        progress?.record(event)
        guard format == .json else { return await line(event.description, peerEvent: true) }
        var json: JSONLine
        switch event {
        case .connected: json = self.event("connected")
        case .disconnected(_, let reason): json = self.event("disconnected"); json.add("reason", reason)
        case .unreachable(_, let address, let error):
            json = self.event("unreachable"); json.add("address", address); json.add("error", error)
        case .refused(_, let code, _):
            json = self.event("refused"); json.add("code", code); json.add("hint", event.refusalHint)
        case .unauthorized(_, let reason):
            json = self.event("unauthorized"); json.add("reason", reason)
        case .lacksJob(_, let job, let jobs):
            json = self.event("lacks-job"); json.add("job", job); json.add("jobs", jobs.joined(separator: ","))
        case .jobDiffers(_, let job, let summary, let expected):
            json = self.event("job-differs"); json.add("job", job); json.add("summary", summary); json.add("expected", expected)
        case .unresponsive: json = self.event("unresponsive")
        case .responsive: json = self.event("responsive")
        }
        json.add("system", event.peer)
        await emit(json, peerEvent: true)
    }

    func scan(_ event: ScanEvent) async {
        progress?.record(event)
        switch event {
        case .started:
            break
        case .completed(let task, let result, let system, let isLocal, let attempt, let seconds):
            await record(.init(input: task.input, text: task.text, job: task.isScan ? nil : task.job, result: result, system: system, attempt: attempt, seconds: seconds))
            await printResults(results?.settle(task.input, result: result))
            guard format == .json else {
                return await line(isLocal ? "Completed: \(task.input)" : "Completed: \(task.input) by \(system)")
            }
            var json = self.event("completed")
            json.add("input", task.input)
            if let text = task.text { json.add("text", text) }
            json.add("result", result)
            json.add("system", system)
            json.add("attempt", attempt)
            json.add("seconds", seconds)
            await emit(json)
        case .rerun(let task, let attempt, let system, let error):
            guard format == .json else { return await line("Re-run task: \(task.input). Failed with: \(error)") }
            var json = self.event("retry")
            json.add("input", task.input)
            if let text = task.text { json.add("text", text) }
            json.add("attempt", attempt)
            json.add("system", system)
            json.add("error", "\(error)")
            await emit(json)
        case .gaveUp(let task, let attempts, let system, let seconds, let error):
            await record(.init(input: task.input, text: task.text, job: task.isScan ? nil : task.job, result: "", status: ScanJournal.Entry.status(of: error),
                               error: "\(error)", system: system, attempt: attempts, seconds: seconds))
            await printResults(results?.settle(task.input, result: nil))
            guard format == .json else {
                return await line("Gave up on task \(task.input) after \(attempts) attempts: \(error)")
            }
            var json = self.event("failed")
            json.add("input", task.input)
            if let text = task.text { json.add("text", text) }
            json.add("attempts", attempts)
            json.add("error", "\(error)")
            json.add("system", system)
            json.add("seconds", seconds)
            await emit(json)
        }
    }

    /// The closing lines; `resumed` sectors came from the journal and count as completed.
    /// Returns the summary as the JSON event `--json` prints (the dashboard's `/state` holds it).
    @discardableResult
    func finish(_ report: ScanReport, resumed: Int) async -> JSONLine {
        // Results held for their turn behind a sector that never had its outcome (a stopped
        // scan) still go out, in input order, before the closing lines.
        await printResults(results?.drain())
        // Every journal line is written (or failed) before the scan says how it ended.
        if journal != nil {
            await Console.writer.flush()
            await reportJournalFailure()
        }
        peerEventsOpen.withLock { $0 = false }
        await progress?.stop()
        let completed = resumed + report.completed
        var json = SummaryTable(report).json(resumed: resumed)
        json.add("time", secondsSinceStart)
        switch format {
        case .text:
            if report.interrupted {
                await line("Stopped: \(completed) completed, \(report.gaveUp) failed, \(report.notRun) not run.")
            } else {
                await line("Done.")
            }
            await line("Finished \(completed) scans in \(String(format: "%.2f", report.seconds)) seconds.")
            // The table goes to stderr: stdout's last line stays the `Finished` line.
            await Console.printError(SummaryTable(report).text)
        case .json:
            await emit(json)
        }
        return json
    }

    /// A JSON event stamped with the time it is made.
    private func event(_ name: String) -> JSONLine {
        var json = JSONLine()
        json.add("event", name)
        json.add("time", secondsSinceStart)
        return json
    }

    /// Seconds since the output was opened, to the millisecond.
    private var secondsSinceStart: Double { ((ContinuousClock.now - started).seconds * 1000).rounded() / 1000 }

    private func emit(_ json: JSONLine, peerEvent: Bool = false) async {
        await line(String(decoding: json.line.dropLast(), as: UTF8.self), peerEvent: peerEvent)
    }

    /// Queues a line for stdout, erasing the progress line in the same write. A peer event
    /// is dropped if the summary has been queued before it.
    private func line(_ text: String, peerEvent: Bool = false) async {
        var pieces: [LineWriter.Piece] = progress == nil ? [] : [.init(Progress.clear, to: 2)]
        pieces.append(.init(text + "\n", to: logDescriptor))
        let open = peerEventsOpen
        let isOpen: @Sendable () -> Bool = { open.withLock { $0 } }
        let condition = peerEvent ? isOpen : nil
        await Console.writer.write(pieces, if: condition)
    }

    /// Queues the sector's journal line on the writer, ahead of the line that reports it: the
    /// writer's thread does the blocking write, in order, so a sector printed is a sector
    /// journaled, and no thread of the pool ever waits on the journal's file.
    private func record(_ entry: ScanJournal.Entry) async {
        guard let journal else { return }
        await Console.writer.write([.init(bytes: journal.line(for: entry), to: journal.descriptor)])
        await reportJournalFailure()
    }

    /// Says once that writing the journal failed (the writer finds out as it writes).
    private func reportJournalFailure() async {
        guard let journal, let reason = Console.writer.failure(of: journal.descriptor) else { return }
        let first = journalFailed.withLock { failed in
            defer { failed = true }
            return !failed
        }
        if first { await error("journal \(journal.path): \(reason); the journal is incomplete from here on") }
    }
}
