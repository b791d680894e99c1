import SkyNetJournal
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransfer
import SkyNetWire

/// What a scan prints: the reference log lines, or (`--json`) one JSON event per line.
/// Every completed sector is journaled before it is printed. In text mode every line has its
/// control characters escaped (`\x1b`): failure messages, peers' names and job summaries come
/// from outside and must not drive the terminal; `--json` keeps them exact (JSON escapes them).
///
/// A descriptor that fails (the journal's file, stdout) is reported once, on stderr, as
/// `error: stdout: No space left on device`; a failed stdout also stops the scan (the run
/// watches `stdoutFailed`) and sets the exit status (`exitStatus(_:)`).
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
    /// The descriptors whose failure has been reported (each once).
    private let reportedFailures = Locked<Set<Int32>>([])
    /// Fulfilled with the errno when a write to stdout fails: a reader that went away
    /// (`EPIPE`, seen at once for a pipe), a full disk.
    let stdoutFailed = Console.writer.failureSignal(of: 1)
    let progress: Progress?
    private let started = ContinuousClock.now
    /// Closed when the summary is about to be queued: no cluster event may follow it.
    private let peerEventsOpen = Locked(true)
    /// With --results: results go to stdout (in input order when it has an order), the log
    /// lines to stderr.
    let results: ResultOrder?
    /// Where log lines go: stdout, or stderr when stdout carries the results.
    private var logDescriptor: Int32 { results == nil ? 1 : 2 }

    /// When files travel: the files each completed task returned, taken when it is journaled.
    let returnRecords: ReturnRecords?

    init(format: Format, journal: ScanJournal?, progress: Progress?, results: ResultOrder? = nil, returnRecords: ReturnRecords? = nil) {
        self.format = format
        self.journal = journal
        self.progress = progress
        self.results = results
        self.returnRecords = returnRecords
    }

    /// An error line on stderr, with the progress line out of the way.
    func error(_ message: String) async {
        await Console.writer.write((progress == nil ? "" : Progress.clear) + "error: \(message.escapingControlCharacters)\n", to: 2)
    }

    /// A line of an ssh host's stderr (`[gpu1] …`, escaped and rate-limited by its link), on
    /// stderr with the progress line out of the way; called from the link's reader thread, so
    /// it is dropped and counted, never waited for, when the console's queue is full.
    func hostLine(_ line: String) {
        Console.log((progress == nil ? "" : Progress.clear) + line) { "(\($0) lines from ssh hosts dropped: the terminal is behind)" }
    }

    /// Whether a journal write failed (the scan then exits 1: its journal is incomplete).
    var journalIncomplete: Bool { journal.map { Console.writer.failure(of: $0.descriptor) != nil } ?? false }

    /// The exit status once every line is out: a stdout that failed (reported once here if it
    /// failed only now) turns a 0 or 1 into 141 when its reader went away, as for a process
    /// that SIGPIPE killed, and into 1 for any other failure; a 2 stays.
    func exitStatus(_ status: Int32) async -> Int32 {
        await Console.writer.flush()
        await reportWriteFailures()
        guard let code = stdoutFailed.current, status <= 1 else { return status }
        return code == EPIPE ? 141 : 1
    }

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
        case .sshUnreachable(_, let login, let reason, let fix):
            json = self.event("unreachable"); json.add("address", "ssh \(login)"); json.add("error", reason); json.add("hint", fix)
        case .shippingAgain(_, let reason): json = self.event("shipping-again"); json.add("reason", reason)
        case .refused(_, let code, _):
            json = self.event("refused"); json.add("code", code.rawValue); json.add("hint", event.refusalHint)
        case .unauthorized(_, let reason):
            json = self.event("unauthorized"); json.add("reason", reason)
        case .lacksJob(_, let job, let jobs):
            json = self.event("lacks-job"); json.add("job", job); json.add("jobs", jobs.joined(separator: ","))
        case .jobDiffers(_, let job, let summary, let expected, let used):
            json = self.event("job-differs"); json.add("job", job); json.add("summary", summary); json.add("expected", expected)
            json.add("used", used)
        case .actorsDiffer(_, let build, let expected):
            json = self.event("actors-differ"); json.add("build", build); json.add("expected", expected)
        case .unresponsive: json = self.event("unresponsive")
        case .responsive: json = self.event("responsive")
        case .draining(_, let reason): json = self.event("draining"); json.add("reason", reason)
        case .returned(_, let reason): json = self.event("returned"); json.add("reason", reason)
        case .tooManyAddresses(_, let host, let found, let used):
            json = self.event("too-many-addresses"); json.add("host", host); json.add("found", found); json.add("used", used)
        case .discovered(_, let group, let host, let address):
            json = self.event("discovered"); json.add("group", group); json.add("host", host); json.add("address", address)
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
            let files = returnRecords?.take(task.id) ?? []
            await record(.init(input: task.input, text: task.text, job: task.isScan ? nil : task.job, result: result, system: system, attempt: attempt, seconds: seconds, files: files))
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
            if !files.isEmpty { json.add("files", objects: files.map(\.json)) }
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
    /// `failure` (the inputs file changed mid-scan, no peer could run it) is why a scan that
    /// ran out of tasks did not complete: it is said before `Finished`, and there is no `Done.`.
    /// Returns the summary as the JSON event `--json` prints (the dashboard's `/state` holds it).
    @discardableResult
    func finish(_ report: ScanReport, resumed: Int, failure: String? = nil) async -> JSONLine {
        await printResults(results?.drain())  // held results go out before the closing lines
        // Every journal line and result is written (or failed) before the scan says how it
        // ended. (The log alone is not waited for here: a reader that pauses would hold up
        // stopping the nodes; a failure found later is reported by `exitStatus`.)
        if journal != nil || results != nil { await Console.writer.flush() }
        await reportWriteFailures()
        peerEventsOpen.withLock { $0 = false }
        await progress?.stop()
        let completed = resumed + report.completed
        var json = JSONLine()
        json.add("event", "summary")
        report.addSummary(to: &json, resumed: resumed)
        json.add("time", secondsSinceStart)
        switch format {
        case .text:
            if report.interrupted {
                await line("Stopped: \(completed) completed, \(report.gaveUp) failed, \(report.notRun) not run.")
            } else if failure == nil, stdoutFailed.current == nil {
                await line("Done.")
            }
            if let failure { await error(failure) }
            let gaveUp = report.gaveUp > 0 ? ", \(report.gaveUp) gave up." : "."
            await line("Finished \(completed) scans in \(String(cFormat: "%.2f", report.seconds)) seconds" + gaveUp)
            // The table goes to stderr: stdout's last line stays the `Finished` line.
            await Console.printError(report.summaryTable)
        case .json:
            if let failure { await error(failure) }
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
        await line(String(decoding: json.line.dropLast(), as: UTF8.self), peerEvent: peerEvent, exact: true)
    }

    /// Queues a line for stdout, erasing the progress line in the same write. A peer event
    /// is dropped if the summary has been queued before it. A text line has its control
    /// characters escaped; a JSON one (`exact`) holds none raw but DEL and C1, kept as JSON
    /// allows, so that it decodes to the exact text.
    private func line(_ text: String, peerEvent: Bool = false, exact: Bool = false) async {
        var pieces: [LineWriter.Piece] = progress == nil ? [] : [.init(Progress.clear, to: 2)]
        pieces.append(.init((exact ? text : text.escapingControlCharacters) + "\n", to: logDescriptor))
        let open = peerEventsOpen
        let condition: (@Sendable () -> Bool)? = peerEvent ? { @Sendable in open.withLock { $0 } } : nil
        await Console.writer.write(pieces, if: condition)
    }

    /// Queues the sector's journal line on the writer, ahead of the line that reports it: the
    /// writer's thread does the blocking write, in order, so a sector printed is a sector
    /// journaled, and no thread of the pool ever waits on the journal's file.
    private func record(_ entry: ScanJournal.Entry) async {
        guard let journal else { return }
        await Console.writer.write([.init(bytes: journal.line(for: entry), to: journal.descriptor)])
        await reportWriteFailures()
    }

    /// Says once for each of the journal and stdout that writing it failed (the writer finds
    /// out as it writes; for a pipe on stdout, as soon as its reader goes away).
    func reportWriteFailures() async {
        if let journal, let reason = firstReport(of: journal.descriptor) {
            await error("journal \(journal.path): \(reason); the journal is incomplete from here on")
        }
        if let reason = firstReport(of: 1) { await error("stdout: \(reason)") }
    }

    /// Why `descriptor` failed, the first time this is asked after it did; nil otherwise.
    private func firstReport(of descriptor: Int32) -> String? {
        guard let reason = Console.writer.failure(of: descriptor) else { return nil }
        return reportedFailures.withLock { $0.insert(descriptor).inserted } ? reason : nil
    }
}
