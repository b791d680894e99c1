import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
@testable import SkyNetWork
import Testing

/// The journal's `printed` marks, the results a resume reads back, and its lock.
struct JournalPrintedTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString).jsonl").path
    }

    func entry(_ input: Int, _ result: String = "r", failed: Bool = false) -> ScanJournal.Entry {
        failed ? .init(input: input, result: "", status: 3, error: "exit status 3", system: "local", attempt: 1, seconds: 0.5)
            : .init(input: input, result: result, system: "local", attempt: 1, seconds: 0.5)
    }

    func append(_ bytes: [UInt8], to path: String) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(bytes))
    }

    @Test func printedMarksAreOneLinePerRunOfSectors() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let journal = try ScanJournal(path: path)
        #expect(String(decoding: journal.printedLines([3, 4, 5, 9, 2]), as: UTF8.self)
                == "{\"printed\":3,\"through\":5}\n{\"printed\":9}\n{\"printed\":2}\n")
        #expect(journal.printedLines([Int]()).isEmpty)
    }

    @Test func aResumeFindsTheCompletedSectorsNoMarkFollows() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let journal = try ScanJournal(path: path)
            for input in 0..<6 { try journal.append(entry(input, failed: input == 4)) }
            try append(journal.printedLines([0, 1, 2, 4]), to: path)
            // Sector 4 gave up, was marked (its empty line), then completed in a later run: that
            // entry comes after the mark, so it still has to be printed.
            try journal.append(entry(4, "again"))
            // A mark with a line that is not one, and one far out of range, change nothing else.
            try append(Array("{\"printed\":\"x\"}\n{\"printed\":100,\"through\":9223372036854775807}\n".utf8), to: path)
        }
        let point = try await ScanJournal.readResumePoint(path: path, total: 6, inputsFile: false)
        #expect(point.count == 6)
        #expect(point.skipped == 1)
        #expect((0..<6).filter { point.unprinted.contains($0) } == [3, 4, 5])
        let places = try await ScanJournal.readResultPlaces(path: path, sectors: point.unprinted)
        #expect(places.map(\.sector) == [3, 4, 5])
        let results = try ScanJournal(path: path).results(at: places)
        #expect(results.map { String(decoding: $0, as: UTF8.self) } == ["r\n", "again\n", "r\n"])
    }

    @Test func aSecondJournalOnTheSameFileIsRefusedNamingThisProcess() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let first = try ScanJournal(path: path)
            #expect(throws: ScanJournal.Failure.self) { _ = try ScanJournal(path: path) }
            do {
                _ = try ScanJournal(path: path)
            } catch {
                #expect(error.description == "journal \(path) is in use by the scan with PID \(getpid()): wait for it to end, or use another journal")
            }
            withExtendedLifetime(first) {}
        }
        // Closed, the lock is free again: at once, unless a child that another test is spawning
        // at this moment still shares the descriptor between its fork and its exec.
        let deadline = ContinuousClock.now + .seconds(5)
        while (try? ScanJournal(path: path)) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        _ = try ScanJournal(path: path)
    }

    @Test func aJournalThatHoldsAnythingIsRefusedForANewScanUntouched() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try ScanJournal(path: path, continuing: false)  // created empty: fine
        _ = try ScanJournal(path: path, continuing: false)  // empty: fine again
        try Data("{\"input\":1,\"res".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ScanJournal.Failure.self) { _ = try ScanJournal(path: path, continuing: false) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 15)  // no newline added
        // The refused journal was closed, and its lock with it.
        _ = try ScanJournal(path: path)
    }

    @Test func sectorSetsRemoveAndSubtract() {
        var a = SectorSet(total: 200), b = SectorSet(total: 200)
        for sector in [0, 63, 64, 130, 199] { a.insert(sector) }
        for sector in [63, 130, 150] { b.insert(sector) }
        let difference = a.subtracting(b)
        #expect((0..<200).filter { difference.contains($0) } == [0, 64, 199])
        #expect(difference.count == 3)
        let removed = a.remove(64), again = a.remove(64)
        #expect(removed && !again)
        #expect(a.count == 4)
    }
}
