import Foundation
import SkyNet

/// The per-system summary of a scan: as a table for people, as a JSON event for programs.
struct SummaryTable {
    let report: ScanReport

    init(_ report: ScanReport) {
        self.report = report
    }

    /// Systems in the order people expect: local first, then by name.
    private var rows: [(name: String, tally: SystemTally)] {
        let order = { (name: String) in (name == ClusterConfig.localName ? 0 : 1, name) }
        return report.systems.sorted { order($0.key) < order($1.key) }.map { ($0.key, $0.value) }
    }

    private func share(_ tally: SystemTally) -> Double {
        report.completed == 0 ? 0 : Double(tally.completed) / Double(report.completed)
    }

    var text: String {
        let header = ["system", "completed", "failed", "re-runs", "busy", "mean s", "share"]
        let body = rows.map { row in
            [row.name, String(row.tally.completed), String(row.tally.failed), String(row.tally.reruns), String(row.tally.busy),
             String(format: "%.3f", row.tally.meanSeconds), String(format: "%.0f%%", share(row.tally) * 100)]
        }
        let widths = header.indices.map { column in ([header] + body).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == 0 ? cell.padded(to: widths[0])
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ")
        }
        return ([line(header)] + body.map(line)).joined(separator: "\n")
    }

    func json(resumed: Int) -> JSONLine {
        var json = JSONLine()
        json.add("event", "summary")
        json.add("total", report.total + resumed)
        json.add("completed", report.completed + resumed)
        json.add("resumed", resumed)
        json.add("failed", report.gaveUp)
        json.add("not_run", report.notRun)
        json.add("reruns", report.reruns)
        json.add("busy", report.busyBounces)
        json.add("seconds", report.seconds)
        json.add("interrupted", report.interrupted)
        var systems = JSONLine()
        for row in rows {
            var system = JSONLine()
            system.add("completed", row.tally.completed)
            system.add("failed", row.tally.failed)
            system.add("reruns", row.tally.reruns)
            system.add("busy", row.tally.busy)
            system.add("mean_seconds", row.tally.meanSeconds)
            system.add("share", share(row.tally))
            systems.add(row.name, object: system)
        }
        json.add("systems", object: systems)
        return json
    }
}

extension String {
    /// The string with spaces after it up to `width` characters (not UTF-16 units).
    func padded(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}
