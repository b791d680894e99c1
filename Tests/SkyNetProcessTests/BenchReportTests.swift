import Foundation
import Testing
@testable import SkyNetBench

/// `skynet-bench --out`: the JSON file, read back as a program comparing sittings reads it.
struct BenchReportTests {
    @Test func aSkippedRowIsWrittenWithNullFiguresAndItsReasonBesideMeasuredRows() throws {
        let measured = Row(workload: "W13", measure: "2000 x /bin/true over ssh links", unit: "tasks/s", values: [900, 1000, 1100])
        var skipped = Row(workload: "W13", measure: "GNU parallel -S 4/h1,4/h2 true (100 jobs)", unit: "tasks/s", values: [])
        skipped.skipped = "GNU parallel is not on PATH: apt-get install parallel"
        let rows = try Self.written([measured, skipped])
        #expect(rows.count == 2)
        #expect(rows[0]["median"] as? Double == 1000)
        #expect(rows[0]["min"] as? Double == 900)
        #expect(rows[0]["values"] as? [Double] == [900, 1000, 1100])
        for figure in ["median", "min", "max"] {
            #expect(rows[1][figure] is NSNull, "\(figure): \(String(describing: rows[1][figure]))")
        }
        #expect(rows[1]["values"] as? [Double] == [])
        #expect(rows[1]["skipped"] as? String == "GNU parallel is not on PATH: apt-get install parallel")
        #expect(rows[0]["skipped"] is NSNull)
    }

    @Test func aValueThatWasNotMeasuredIsWrittenAsNull() throws {
        // W9 records NaN for a run whose first `connected` line never came.
        let row = Row(workload: "W9", measure: "last connected", unit: "ms", values: [12, .nan, 14])
        let written = try #require(try Self.written([row]).first)
        let values = try #require(written["values"] as? [Any])
        #expect(values.count == 3)
        #expect(values[0] as? Double == 12)
        #expect(values[1] is NSNull)
        #expect(values[2] as? Double == 14)
    }

    /// The rows of the file `writeJSON` writes for `rows`.
    static func written(_ rows: [Row]) throws -> [[String: Any]] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-bench-report-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try writeJSON(rows, runs: 3, to: path)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        return try #require(root["rows"] as? [[String: Any]])
    }
}
