import Foundation
import SkyNet

/// What a scan prints: the reference log lines, or (`--json`) one JSON event per line.
/// Every completed sector is journaled before it is printed.
final class ScanOutput: Sendable {
    enum Format: Sendable { case text, json }

    let format: Format
    private let journal: ScanJournal?
    private let journalFailed = Locked(false)
    private let progress: Progress?

    init(format: Format, journal: ScanJournal?, progress: Progress?) {
        self.format = format
        self.journal = journal
        self.progress = progress
    }

    /// Stops the progress line for good (on every path out of a scan).
    func close() {
        progress?.stop()
    }

    /// An error line on stderr, with the progress line out of the way.
    func error(_ message: String) {
        if let progress {
            progress.clearing { Console.err("error: \(message)") }
        } else {
            Console.err("error: \(message)")
        }
    }

    /// Whether a journal write failed (the scan then exits 1: its journal is incomplete).
    var journalIncomplete: Bool { journalFailed.withLock { $0 } }

    func resumed(_ count: Int, from path: String, skipped: Int) {
        switch format {
        case .text:
            Console.out("Resumed: \(count) sectors from \(path)" + (skipped > 0 ? " (\(skipped) unreadable lines skipped)" : ""))
        case .json:
            var json = event("resumed")
            json.add("sectors", count)
            json.add("journal", path)
            json.add("skipped", skipped)
            emit(json)
        }
    }

    func cluster(_ event: ClusterEvent) {
        progress?.record(event)
        guard format == .json else { return line(event.description) }
        var json: JSONLine
        switch event {
        case .connected: json = self.event("connected")
        case .disconnected(_, let reason): json = self.event("disconnected"); json.add("reason", reason)
        case .unreachable(_, let address, let error):
            json = self.event("unreachable"); json.add("address", address); json.add("error", error)
        case .refused(_, let code, _):
            json = self.event("refused"); json.add("code", code); json.add("hint", event.refusalHint)
        case .unresponsive: json = self.event("unresponsive")
        case .responsive: json = self.event("responsive")
        }
        json.add("system", event.peer)
        emit(json)
    }

    func scan(_ event: ScanEvent) {
        progress?.record(event)
        switch event {
        case .started:
            break
        case .completed(let task, let result, let system, let isLocal, let attempt, let seconds):
            record(.init(input: task.input, result: result, system: system, attempt: attempt, seconds: seconds))
            guard format == .json else {
                return line(isLocal ? "Completed: \(task.input)" : "Completed: \(task.input) by \(system)")
            }
            var json = self.event("completed")
            json.add("input", task.input)
            json.add("result", result)
            json.add("system", system)
            json.add("attempt", attempt)
            json.add("seconds", seconds)
            emit(json)
        case .rerun(let task, let attempt, let system, let error):
            guard format == .json else { return line("Re-run task: \(task.input). Failed with: \(error)") }
            var json = self.event("retry")
            json.add("input", task.input)
            json.add("attempt", attempt)
            json.add("system", system)
            json.add("error", "\(error)")
            emit(json)
        case .gaveUp(let task, let attempts, let error):
            guard format == .json else {
                return line("Gave up on task \(task.input) after \(attempts) attempts: \(error)")
            }
            var json = self.event("failed")
            json.add("input", task.input)
            json.add("attempts", attempts)
            json.add("error", "\(error)")
            emit(json)
        }
    }

    /// The closing lines; `resumed` sectors came from the journal and count as completed.
    func finish(_ report: ScanReport, resumed: Int) {
        progress?.stop()
        let completed = resumed + report.completed
        switch format {
        case .text:
            if report.interrupted {
                Console.out("Stopped: \(completed) completed, \(report.gaveUp) failed, \(report.notRun) not run.")
            } else {
                Console.out("Done.")
            }
            Console.out("Finished \(completed) scans in \(String(format: "%.2f", report.seconds)) seconds.")
            // The table goes to stderr: stdout's last line stays the `Finished` line.
            Console.err(SummaryTable(report).text)
        case .json:
            emit(SummaryTable(report).json(resumed: resumed))
        }
    }

    private func event(_ name: String) -> JSONLine {
        var json = JSONLine()
        json.add("event", name)
        return json
    }

    private func emit(_ json: JSONLine) {
        line(String(decoding: json.line.dropLast(), as: UTF8.self))
    }

    /// Prints a line on stdout, erasing the progress line first.
    private func line(_ text: String) {
        if let progress {
            progress.clearing { Console.out(text) }
        } else {
            Console.out(text)
        }
    }

    private func record(_ entry: ScanJournal.Entry) {
        guard let journal else { return }
        do {
            try journal.append(entry)
        } catch {
            let first = journalFailed.withLock { failed in
                defer { failed = true }
                return !failed
            }
            if first { self.error("\(error); the journal is incomplete from here on") }
        }
    }
}
