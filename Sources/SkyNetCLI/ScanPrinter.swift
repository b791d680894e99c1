import Foundation
import SkyNet

/// Prints a scan's events as the reference log lines.
struct ScanPrinter: Sendable {
    func print(_ event: ScanEvent) {
        switch event {
        case .completed(let task, _, let system, let isLocal, _, _):
            Console.out(isLocal ? "Completed: \(task.input)" : "Completed: \(task.input) by \(system)")
        case .rerun(let task, _, _, let error):
            Console.out("Re-run task: \(task.input). Failed with: \(error)")
        case .gaveUp(let task, let attempts, let error):
            Console.out("Gave up on task \(task.input) after \(attempts) attempts: \(error)")
        }
    }

    func finish(_ report: ScanReport) {
        Console.out("Done.")
        Console.out("Finished \(report.completed) scans in \(String(format: "%.2f", report.seconds)) seconds.")
    }
}
