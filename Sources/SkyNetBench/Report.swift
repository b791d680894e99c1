import Foundation

/// One measured quantity of a workload: runs summarised, with its ideal and target.
struct Row {
    let workload: String
    let measure: String
    let unit: String
    let values: [Double]
    var ideal = "-"
    var target = "-"
    /// Whether the median meets the target; nil when there is none.
    var met: Bool? = nil
    var note = ""
    /// Why this measure was not taken (a peer that is not installed); its figures are then
    /// empty: `-` in the table, `null` in the JSON file.
    var skipped: String? = nil

    var median: Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    var min: Double { values.min() ?? .nan }
    var max: Double { values.max() ?? .nan }
}

/// Percentile of `values` (0...100), nearest rank.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]
}

func format(_ value: Double, _ unit: String) -> String {
    guard value.isFinite else { return "-" }
    return switch unit {
    case "tasks/s", "KiB": String(format: "%.0f", value)
    case "µs", "ms": String(format: "%.1f", value)
    default: String(format: "%.3f", value)
    }
}

func printTable(_ rows: [Row]) {
    let header = ["workload", "measure", "unit", "median", "min", "max", "ideal", "target", "met"]
    let body = rows.map { row in
        [row.workload, row.measure, row.unit, row.skipped == nil ? format(row.median, row.unit) : "skipped",
         format(row.min, row.unit), format(row.max, row.unit), row.ideal, row.target, row.met.map { $0 ? "yes" : "NO" } ?? "-"]
    }
    let widths = header.indices.map { column in ([header] + body).map { $0[column].count }.max() ?? 0 }
    for cells in [header] + body {
        print(cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
            .joined(separator: "  "))
    }
    for row in rows {
        if let skipped = row.skipped { print("\(row.workload) \(row.measure): skipped: \(skipped)") }
        if !row.note.isEmpty { print("\(row.workload) \(row.measure): \(row.note)") }
    }
}

/// Writes the rows and the workloads that failed (`W13 failed: …`) as JSON. A figure that
/// was not measured (a skipped row's, NaN, infinite) is `null`: JSON has no NaN.
func writeJSON(_ rows: [Row], failed: [String] = [], runs: Int, to path: String) throws {
    func number(_ value: Double) -> Any { value.isFinite ? value : NSNull() }
    let objects: [[String: Any]] = rows.map { row in
        ["workload": row.workload, "measure": row.measure, "unit": row.unit, "median": number(row.median),
         "min": number(row.min), "max": number(row.max), "values": row.values.map(number), "ideal": row.ideal,
         "target": row.target, "met": row.met.map { $0 as Any } ?? NSNull(), "note": row.note,
         "skipped": row.skipped.map { $0 as Any } ?? NSNull()]
    }
    let root: [String: Any] = [
        "date": ISO8601DateFormatter().string(from: Date()), "runs": runs,
        "cores": ProcessInfo.processInfo.activeProcessorCount, "rows": objects, "failed": failed,
    ]
    try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
        .write(to: URL(fileURLWithPath: path))
}
