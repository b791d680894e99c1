import Foundation
import SkyNet

/// Prints a scan's events as the reference log lines, journaling each completed sector
/// before its line is printed.
final class ScanPrinter: Sendable {
    private let journal: ScanJournal?
    private let failed = Locked(false)

    init(journal: ScanJournal?) {
        self.journal = journal
    }

    /// Whether a journal write failed (the scan then exits 1: its journal is incomplete).
    var journalFailed: Bool { failed.withLock { $0 } }

    func print(_ event: ScanEvent) {
        switch event {
        case .completed(let task, let result, let system, let isLocal, let attempt, let seconds):
            record(.init(input: task.input, result: result, system: system, attempt: attempt, seconds: seconds))
            Console.out(isLocal ? "Completed: \(task.input)" : "Completed: \(task.input) by \(system)")
        case .rerun(let task, _, _, let error):
            Console.out("Re-run task: \(task.input). Failed with: \(error)")
        case .gaveUp(let task, let attempts, let error):
            Console.out("Gave up on task \(task.input) after \(attempts) attempts: \(error)")
        }
    }

    /// The closing lines; `resumed` sectors came from the journal and count as completed.
    func finish(_ report: ScanReport, resumed: Int) {
        if report.interrupted {
            Console.out("Stopped: \(resumed + report.completed) completed, \(report.gaveUp.count) failed, \(report.notRun) not run.")
        } else {
            Console.out("Done.")
        }
        Console.out("Finished \(resumed + report.completed) scans in \(String(format: "%.2f", report.seconds)) seconds.")
    }

    private func record(_ entry: ScanJournal.Entry) {
        guard let journal else { return }
        do {
            try journal.append(entry)
        } catch {
            let first = failed.withLock { failed in
                defer { failed = true }
                return !failed
            }
            if first { Console.err("error: \(error); the journal is incomplete from here on") }
        }
    }
}
