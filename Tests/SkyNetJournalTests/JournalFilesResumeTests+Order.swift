import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A sector that runs again for its files is one never journaled: its old result is neither
/// skipped nor printed; the last completed entry of a sector decides; and the checks, run beside
/// the reading, take effect in journal order.
extension JournalFilesResumeTests {
    @Test func aSectorThatRunsAgainHasItsOldResultNeitherSkippedNorPrinted() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 4)
            try scan.run(printing: [0])
            #expect(scan.sectors(try await scan.resume().unprinted) == [1, 2, 3])
            try FileManager.default.removeItem(atPath: scan.here(Scan.output(2)))
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 1, 3])
            #expect(scan.sectors(point.unprinted) == [1, 3])
            let places = try await ScanJournal.readResultPlaces(path: scan.journal, sectors: point.unprinted)
            #expect(places.map(\.sector) == [1, 3])
        }
    }

    /// Sector 0 was re-run and its new entry holds; sector 2's last entry records another size
    /// than its file has. The first reason met (sector 0's) no longer applies, so the message
    /// names sector 2's.
    @Test func theLastCompletedEntryOfASectorDecides() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            let files = try (0..<3).map { try scan.write(ReturnSandbox.random(500 + $0, seed: UInt64($0)), at: Scan.output($0)) }
            let stale = ReturnedFile(path: files[0].path, size: files[0].size, sha256: SHA256.hash(Array("old".utf8)))
            let longer = ReturnedFile(path: files[2].path, size: files[2].size + 1, sha256: files[2].sha256)
            try scan.append([
                scan.entry(0, files: [stale]), scan.entry(1, files: [files[1]]), scan.entry(2, files: [files[2]]),
                scan.entry(2, files: [longer]), scan.entry(0, files: [files[0]]),
            ])
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 1])
            #expect(point.filesRerun == 1)
            #expect(point.filesMessage == message(1, first: "photos/a2.jpg.out changed (size)"))
            #expect(point.fingerprint(of: 0) == inputFingerprint(Scan.input(0)))
        }
    }

    /// Hundreds of entries, a `printed` mark after each even one, every seventh file gone: each
    /// mark must take effect after its entry's verdict, however far the hashing lags.
    @Test func manyEntriesTakeEffectInJournalOrder() async throws {
        try await ReturnSandbox.with { sandbox in
            let count = 300
            let scan = Scan(sandbox: sandbox, count: count)
            try scan.run(printing: Array(stride(from: 0, to: count, by: 2)))
            for sector in stride(from: 0, to: count, by: 7) { try FileManager.default.removeItem(atPath: scan.here(Scan.output(sector))) }
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == (0..<count).filter { $0 % 7 != 0 })
            #expect(scan.sectors(point.unprinted) == (0..<count).filter { $0 % 7 != 0 && $0 % 2 == 1 })
            #expect(point.filesRerun == (count + 6) / 7)
            #expect(point.filesMessage == message((count + 6) / 7, first: "photos/a0.jpg.out is missing"))
            #expect(point.skipped == 0)
        }
    }

    /// A resume that must fail for another reason (the journal ran another job) fails with it.
    @Test func aResumeOfAnotherJobFailsAsBefore() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 2)
            try scan.run()
            let spec = TransferSpec(transfer: true, returns: [try ReturnTemplate("{}.out")])
            await #expect(throws: ScanJournal.Failure.self) {
                try await ScanJournal.readResumePoint(path: scan.journal, total: 2, inputsFile: true, job: "other", returns: spec,
                                                      roots: sandbox.roots)
            }
        }
    }
}

extension JournalFilesResumeTests {
    /// A thousand entries whose checks all wait on the hashing threads: the lines held for
    /// them never exceed the window, so a journal of any length holds a bounded number of checks.
    @Test func theChecksInFlightStayWithinTheWindow() throws {
        try ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 1000)
            let file = try scan.write(ReturnSandbox.random(8 << 10, seed: 5), at: "shared.out")
            let spec = TransferSpec(transfer: true, returns: [try ReturnTemplate("shared.out")])
            let files = try #require(try ScanJournal.ResumeFiles(spec: spec, roots: sandbox.roots, journal: scan.journal))
            var point = ScanJournal.ResumePoint(total: scan.count, fingerprints: false)
            for sector in 0..<scan.count {
                files.completed(scan.entry(sector, files: [file]), fingerprint: nil, check: true, into: &point)
                files.printed(sector...sector, into: &point)
            }
            files.finish(into: &point)
            #expect(files.mostHeld <= ScanJournal.ResumeFiles.window)
            #expect(files.mostHeld > 1)  // the checks did wait: the window was used
            #expect(point.count == scan.count)
            #expect(point.unprinted.isEmpty)
        }
    }
}
