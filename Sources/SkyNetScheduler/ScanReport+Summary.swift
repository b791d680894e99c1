import SkyNetRuntime
import SkyNetWire

extension ScanReport {
    /// The systems in the order people expect: the local one first, then by name.
    package var systemsInOrder: [(name: String, tally: SystemTally)] {
        let order = { (name: String) in (name == Systems.localName ? 0 : 1, name) }
        return systems.sorted { order($0.key) < order($1.key) }.map { ($0.key, $0.value) }
    }

    /// The part of all `completed` tasks that `tally`'s system did, 0...1 (`completed` is
    /// given: summing it is a walk over every system).
    package static func share(of tally: SystemTally, among completed: Int) -> Double {
        completed == 0 ? 0 : Double(tally.completed) / Double(completed)
    }

    /// Adds the fields of the `--json` summary: the same code makes the dashboard's `/state`,
    /// so that the two agree to the byte at the end of a scan. `resumed` sectors came from
    /// the journal and count as completed.
    package func addSummary(to json: inout JSONLine, resumed: Int) {
        let completed = completed
        json.add("total", total + resumed)
        json.add("completed", completed + resumed)
        json.add("resumed", resumed)
        json.add("failed", gaveUp)
        json.add("gave_up", gaveUp)  // `failed`, named for what it counts
        json.add("not_run", total - completed - gaveUp)
        json.add("reruns", reruns)
        json.add("busy", busyBounces)
        json.add("seconds", seconds)
        json.add("interrupted", interrupted)
        var rows = JSONLine()
        for row in systemsInOrder {
            var system = JSONLine()
            system.add("completed", row.tally.completed)
            system.add("failed", row.tally.failed)
            system.add("attempts_failed", row.tally.failed)  // `failed`, named for what it counts
            system.add("reruns", row.tally.reruns)
            system.add("busy", row.tally.busy)
            system.add("mean_seconds", row.tally.meanSeconds)
            system.add("share", Self.share(of: row.tally, among: completed))
            rows.add(row.name, object: system)
        }
        json.add("systems", object: rows)
    }
}
