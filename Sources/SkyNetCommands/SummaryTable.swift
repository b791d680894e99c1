import SkyNetScheduler

extension ScanReport {
    /// The per-system summary of a scan as a table for people (`--json` prints it as the
    /// `summary` event). `attempts failed` counts the attempts that failed on the system (each
    /// ran again or gave up); the tasks that gave up in all are on the `Finished` line. A name
    /// from a shared cluster file has its control characters escaped.
    var summaryTable: String {
        let header = ["system", "completed", "attempts failed", "re-runs", "busy", "mean s", "share"]
        let completed = completed
        let body = systemsInOrder.map { row in
            [row.name.escapingControlCharacters, String(row.tally.completed), String(row.tally.failed), String(row.tally.reruns), String(row.tally.busy),
             String(cFormat: "%.3f", row.tally.meanSeconds), String(cFormat: "%.0f%%", ScanReport.share(of: row.tally, among: completed) * 100)]
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
}

extension String {
    /// The string with spaces after it up to `width` characters (not UTF-16 units).
    func padded(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}
