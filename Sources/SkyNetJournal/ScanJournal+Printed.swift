import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// What reached stdout. With `--results` the journal also says which sectors' results were
/// printed: `{"printed":7}` or `{"printed":7,"through":12}` (sectors 7 to 12), written by the
/// output's writer thread right after the write to stdout that carried them. A resume prints
/// the completed results that no such mark follows: those `--keep-order` held back, and the one
/// a SIGKILL caught between its journal line and its result.
extension ScanJournal {
    /// The `printed` marks of `sectors` (in the order printed), one line per run of consecutive
    /// sectors; empty for none.
    package func printedLines<Sectors: Sequence<Int>>(_ sectors: Sectors) -> [UInt8] {
        var runs: [ClosedRange<Int>] = []
        for sector in sectors {
            if let last = runs.last, sector == last.upperBound + 1 {
                runs[runs.count - 1] = last.lowerBound...sector
            } else {
                runs.append(sector...sector)
            }
        }
        return runs.flatMap { run in
            var json = JSONLine()
            json.add("printed", run.lowerBound)
            if run.upperBound > run.lowerBound { json.add("through", run.upperBound) }
            return json.takeLine()
        }
    }

    /// A `printed` mark in exactly the form `printedLines` writes; nil for anything else.
    static func printedMark(_ line: UnsafeBufferPointer<UInt8>) -> ClosedRange<Int>? {
        var reader = ExactLineReader(bytes: line)
        guard reader.literal(#"{"printed":"#), let first = reader.integer() else { return nil }
        var last = first
        if reader.literal(#","through":"#) {
            guard let value = reader.integer(), value >= first else { return nil }
            last = value
        }
        guard reader.literal("}"), reader.atEnd else { return nil }
        return first...last
    }

    /// Where the journal holds a completed sector's result.
    package struct ResultPlace: Sendable {
        package let sector: Int
        let place: Place
    }

    /// Where the results of `sectors` lie (the last completed entry of each), in sector order:
    /// what a resume prints of what the earlier run journaled and did not print. Read as a
    /// stream on the blocking pool; holds 24 bytes a sector found.
    package static func readResultPlaces(path: String, sectors: SectorSet) async throws -> [ResultPlace] {
        guard !sectors.isEmpty else { return [] }
        return try await onBlockingPool { () throws -> [ResultPlace] in
            var places: [ResultPlace] = []
            _ = try forEachLine(path: path) { line, place in
                guard case .entry(let entry) = line, entry.completed, sectors.contains(entry.input) else { return }
                places.append(ResultPlace(sector: entry.input, place: place))
            }
            // Sorted by sector, a later entry of a sector after an earlier one: keep the last.
            places.sort { ($0.sector, $0.place.offset) < ($1.sector, $1.place.offset) }
            return places.indices.filter { $0 == places.count - 1 || places[$0 + 1].sector != places[$0].sector }.map { places[$0] }
        }
    }

    /// The results at `places`, read back from this journal (one `pread` each: for threads of
    /// our own), each as the bytes `--results` prints: the result and a newline.
    package func results(at places: [ResultPlace]) throws(Failure) -> [[UInt8]] {
        var results: [[UInt8]] = []
        for place in places {
            let line = try bytes(place.place.length, at: place.place.offset)
            guard line.count == place.place.length else { throw Failure(description: "journal \(path): it shrank while being read") }
            guard case .entry(let entry)? = line.withUnsafeBufferPointer({ Self.readLine($0) }), entry.input == place.sector else {
                throw Failure(description: "journal \(path): the line of sector \(place.sector) changed while being read")
            }
            results.append(Self.printedBytes(entry.result))
        }
        return results
    }

    /// A result as the bytes `--results` prints: the text and a newline, in one buffer of its size.
    package static func printedBytes(_ result: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(result.utf8.count + 1)
        bytes += result.utf8
        bytes.append(10)
        return bytes
    }
}
