import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

@Suite(.timeLimit(.minutes(5)), .onOwnThread)
struct JournalTests {
    /// A fresh path in the temporary folder; the caller removes it.
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString).jsonl").path
    }

    func line(_ input: Int, result: String = "r", system: String = "local") -> String {
        #"{"input":\#(input),"result":"\#(result)","system":"\#(system)","attempt":1,"seconds":0.5}"# + "\n"
    }

    /// Writes `count` entries in chunks, so the test itself never holds the file.
    func writeJournal(_ path: String, count: Int) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingAtPath: path).unwrapped()
        defer { try? handle.close() }
        var text = ""
        for input in 0..<count {
            text += line(input, result: "result-\(input)", system: "node\(input % 7)")
            if text.utf8.count > 1 << 20 {
                try handle.write(contentsOf: Data(text.utf8))
                text = ""
            }
        }
        try handle.write(contentsOf: Data(text.utf8))
    }

    @Test func aMillionLineJournalIsReadInBoundedMemory() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try writeJournal(path, count: 1_000_000)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size > 80 << 20)

        let (sectors, count, skipped, growth) = try await MemoryUse.measuring {
            let before = try MemoryUse.resetPeak()
            let point = try await ScanJournal.readResumePoint(path: path, total: 1_000_000, inputsFile: false)
            return (point.sectors, point.count, point.skipped, try MemoryUse.peak() - before)
        }
        // The file is over 80 MiB; the old reader held all of it, then an array of its entries
        // (163 MiB of growth). The peak is the whole process's: other suites run beside this
        // one, and under ThreadSanitizer their shadow memory counts too (60 MiB seen once), so
        // the bound is generous yet far below what the old reader needs.
        #expect(growth < 100 << 20, "peak RSS grew by \(growth >> 20) MiB")
        #expect(count == 1_000_000)
        #expect(skipped == 0)
        #expect(sectors.contains(0) && sectors.contains(999_999) && !sectors.contains(1_000_000))
    }

    @Test func tornAndOverlongLinesAreSkippedAndCounted() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let overlong = line(9, result: String(repeating: "x", count: ScanJournal.maxLineLength))
        // Enough entries before it that lines also span the reader's chunks.
        let filler = (100..<5_000).map { line($0) }.joined()
        let text = line(1) + #"{"input":2,"resu"# + "\n" + "\n" + overlong + line(3) + filler
            + "not json\n" + #"{"input":4}"# + "\n" + line(5) + overlong.dropLast()
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))

        let (entries, skipped) = try ScanJournal.read(path: path)
        // Torn, overlong, "not json", fields missing, and the last overlong line without its newline.
        #expect(skipped == 5)
        #expect(entries.map(\.input) == [1, 3] + Array(100..<5_000) + [5])
        #expect(entries.first == ScanJournal.Entry(input: 1, result: "r", system: "local", attempt: 1, seconds: 0.5))
    }

    @Test func aLineLongerThanTheBoundIsSkippedEvenWhenItParses() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data((line(1) + line(2, result: String(repeating: "y", count: 200)) + line(3)).utf8)
            .write(to: URL(fileURLWithPath: path))
        var inputs: [Int] = []
        let skipped = try ScanJournal.forEachEntry(path: path, maxLineLength: 150) { inputs.append($0.input) }
        #expect(inputs == [1, 3])
        #expect(skipped == 1)
    }

    @Test func aJournalNotEndingInANewlineGetsOneBeforeTheNextEntry() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data((line(1) + #"{"input":2,"res"#).utf8).write(to: URL(fileURLWithPath: path))
        try ScanJournal(path: path).append(.init(input: 3, result: "c", system: "beta", attempt: 2, seconds: 0.25))
        let (entries, skipped) = try ScanJournal.read(path: path)
        #expect(entries.map(\.input) == [1, 3])
        #expect(skipped == 1)
        // Opened again, a journal that ends in a newline gets no blank line.
        let length = try Data(contentsOf: URL(fileURLWithPath: path)).count
        _ = try ScanJournal(path: path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == length)
    }

    @Test func anEmptyOrMissingJournalHoldsNothing() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try await ScanJournal.readResumePoint(path: path, total: 10, inputsFile: false).count == 0)
        _ = try ScanJournal(path: path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
    }

    @Test func aResumePointCountsEachSectorInRangeOnce() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data((line(4) + line(4) + line(-1) + line(10) + line(0)).utf8).write(to: URL(fileURLWithPath: path))
        let point = try await ScanJournal.readResumePoint(path: path, total: 10, inputsFile: false)
        #expect(point.count == 2)
        #expect(point.skipped == 0)
        #expect((0..<10).filter { point.sectors.contains($0) } == [0, 4])
    }
}

@Suite(.onOwnThread)
struct JournalLineTests {
    func fast(_ text: String) -> ScanJournal.Entry? {
        Array(text.utf8).withUnsafeBufferPointer { ScanJournal.Entry(journalLine: $0) }
    }

    let written = #"{"input":-12,"status":0,"result":"12","system":"beta","attempt":2,"seconds":1.25}"#

    @Test func theFastReaderReadsWhatTheJournalWrites() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let entry = ScanJournal.Entry(input: -12, result: "12", system: "beta", attempt: 2, seconds: 1.25)
        try ScanJournal(path: path).append(entry)
        let line = try String(contentsOfFile: path, encoding: .utf8).dropLast()
        #expect(line == written)
        #expect(fast(String(line)) == entry)
    }

    @Test func inputTextAndFailuresGoInAndComeBackBothWays() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let entries = [
            ScanJournal.Entry(input: 0, text: "a b.jpg", result: "ok", system: "node1", attempt: 1, seconds: 0.5),
            ScanJournal.Entry(input: 1, text: "c.jpg", result: "", status: 3, error: "exit status 3: no such file",
                              system: "", attempt: 5, seconds: 0),
            ScanJournal.Entry(input: 2, text: "quote\"d\n", result: "x\ty", system: "local", attempt: 2, seconds: 1),
            ScanJournal.Entry(input: 3, text: "d", job: "e", result: "d", system: "local", attempt: 1, seconds: 0.25),
        ]
        let journal = try ScanJournal(path: path)
        for entry in entries { try journal.append(entry) }
        #expect(try ScanJournal.read(path: path).entries == entries)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { Array($0.utf8) }
        #expect(lines.map { ScanJournal.parse($0) } == entries)
        #expect(lines.map { line in line.withUnsafeBufferPointer { ScanJournal.Entry(journalLine: $0) } }[3] == entries[3])
        #expect(try ScanJournal.read(path: path).entries.filter(\.completed).count == 3)  // the failed one runs again
    }

    @Test func aVersionOneLineStillReadsAsACompletedSector() {
        let entry = fast(#"{"input":-12,"result":"12","system":"beta","attempt":2,"seconds":1.25}"#)
        #expect(entry == ScanJournal.Entry(input: -12, result: "12", system: "beta", attempt: 2, seconds: 1.25))
        #expect(entry?.completed == true)
    }

    @Test func aFailureMessageGivesItsStatus() {
        typealias Entry = ScanJournal.Entry
        #expect(Entry.status(of: ScanFailure(code: "task-failed", message: "exit status 3: no such file")) == 3)
        #expect(Entry.status(of: ScanFailure(code: "task-failed", message: "killed by signal 9 (SIGKILL)")) == 137)
        #expect(Entry.status(of: ScanFailure(code: "deadline", message: "stopped at its deadline of 5 s")) == -1)
    }

    @Test func everyTornPrefixOfALineIsRefused() {
        for end in 0..<written.utf8.count {
            let prefix = Array(written.utf8.prefix(end))
            #expect(prefix.withUnsafeBufferPointer { ScanJournal.Entry(journalLine: $0) } == nil)
            #expect(ScanJournal.parse(prefix) == nil)
        }
    }

    @Test func otherFormsFallBackToTheFullParserWithTheSameMeaning() {
        let others = [
            #"{"result":"12","input":-12,"system":"beta","attempt":2,"seconds":1.25}"#,
            #"{"input":-12,"result":"12","system":"beta","attempt":2,"seconds":1.25}"#,
            #"{ "input": -12, "result": "12", "system": "beta", "attempt": 2, "seconds": 1.25 }"#,
            #"{"input":-12,"result":"1\u0032","system":"beta","attempt":2,"seconds":1.25}"#,
            #"{"input":-12,"result":"12","system":"beta","attempt":2,"seconds":125e-2}"#,
        ]
        for line in others {
            let fastEntry = fast(line)
            #expect(fastEntry == nil || fastEntry == ScanJournal.parse(Array(line.utf8)))
            #expect(ScanJournal.parse(Array(line.utf8)) == fast(written))
        }
    }

    /// Mutated lines: whatever the fast reader accepts, the full parser reads the same way.
    @Test func theFastReaderNeverDisagreesWithTheFullParser() {
        let seed = FuzzSeed(7)
        var seeded = seed.random
        let replacements = Array("0123456789-.e\"\\}, a".utf8), insertions = Array("0123456789\"".utf8)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = Array(written.utf8)
            for _ in 0..<(1 + seeded.next() % 3) {
                let at = Int(seeded.next() % UInt64(bytes.count))
                switch seeded.next() % 3 {
                case 0: bytes[at] = replacements[Int(seeded.next() % UInt64(replacements.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(insertions[Int(seeded.next() % UInt64(insertions.count))], at: at)
                }
                if bytes.isEmpty { break }
            }
            guard let entry = bytes.withUnsafeBufferPointer({ ScanJournal.Entry(journalLine: $0) }) else { continue }
            accepted += 1
            #expect(ScanJournal.parse(bytes) == entry, "\(seed): \(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(accepted > 100, "\(seed)")
    }
}

@Suite(.onOwnThread)
struct SectorSetTests {
    @Test func holdsSectorsInItsRangeOnly() {
        var set = SectorSet(total: 130)
        #expect(set.isEmpty)
        let inserted = [0, 63, 64, 129, 64, 130, -1].map { set.insert($0) }
        #expect(inserted == [true, true, true, true, false, false, false])
        #expect(set.count == 4)
        #expect((-5..<200).filter { set.contains($0) } == [0, 63, 64, 129])
        #expect(SectorSet(total: 0).contains(0) == false)
    }

    @Test func theAbsentSectorsAreThoseNotInTheSetInOrder() {
        var set = SectorSet(total: 200)
        for sector in [0, 1, 2, 63, 64, 65, 127, 128, 199] { set.insert(sector) }
        let expected = (0..<230).filter { !set.contains($0) }
        #expect(Array(set.absent(below: 230)) == expected)
        #expect(Array(set.absent(below: 3)) == [])
        #expect(Array(SectorSet(total: 0).absent(below: 5)) == [0, 1, 2, 3, 4])
    }

    @Test func skippingTenMillionResumedSectorsTakesAWordAtATime() {
        var set = SectorSet(total: 10_000_000)
        for sector in 0..<9_999_990 { set.insert(sector) }
        #expect(set.firstAbsent(from: 0) == 9_999_990)
        #expect(Array(set.absent(below: 10_000_000)) == Array(9_999_990..<10_000_000))
    }
}
