import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// `--resume` with `--return`: a completed sector counts as done only if each of its
/// returned files is still there, reached without a link, with the size and SHA-256 its entry
/// recorded; any other runs again, as if never journaled, and the resume says why once. Real
/// files in a sandbox whose `here/` stands for the scan's directory and `abs/` for `/`.
@Suite(.onOwnThread)
struct JournalFilesResumeTests {
    /// The journal of a scan of `count` inputs `photos/a<i>.jpg` with `--return {}.out`, each
    /// output written in the sandbox; entries in `order` (default: each sector once, in order).
    struct Scan {
        let sandbox: ReturnSandbox
        let count: Int
        var journal: String { sandbox.base + "/journal.jsonl" }

        static func input(_ sector: Int) -> String { "photos/a\(sector).jpg" }
        static func output(_ sector: Int) -> String { input(sector) + ".out" }

        func write(_ bytes: [UInt8], at path: String) throws -> ReturnedFile {
            let full = (path.hasPrefix("/") ? sandbox.abs : sandbox.here + "/") + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
            return ReturnedFile(path: path, size: Int64(bytes.count), sha256: SHA256.hash(bytes))
        }

        func here(_ path: String) -> String { sandbox.here + "/" + path }

        func entry(_ sector: Int, text: String? = nil, files: [ReturnedFile]) -> ScanJournal.Entry {
            ScanJournal.Entry(input: sector, text: text ?? Self.input(sector), job: "t", result: "result-\(sector)", system: "gpu1",
                              attempt: 1, seconds: 0.5, files: files)
        }

        /// Writes every sector's output and its entry; returns what each entry recorded.
        @discardableResult
        func run(printing printed: [Int] = []) throws -> [ReturnedFile] {
            let journal = try ScanJournal(path: journal)
            var recorded: [ReturnedFile] = []
            for sector in 0..<count {
                let file = try write(ReturnSandbox.random(1000 + sector, seed: UInt64(sector)), at: Self.output(sector))
                recorded.append(file)
                try journal.append(entry(sector, files: [file]))
                if printed.contains(sector) { try #require(journal.printedLines([sector]).withUnsafeBytes { writeFully($0, to: journal.descriptor) }) }
            }
            return recorded
        }

        func append(_ entries: [ScanJournal.Entry]) throws {
            let journal = try ScanJournal(path: journal)
            for entry in entries { try journal.append(entry) }
        }

        func resume(_ templates: [String]? = ["{}.out"], inputsFile: Bool = true) async throws -> ScanJournal.ResumePoint {
            var spec: TransferSpec?
            if let templates {
                var returns: [ReturnTemplate] = []
                for template in templates { returns.append(try ReturnTemplate(template)) }
                spec = TransferSpec(transfer: true, returns: returns)
            }
            return try await ScanJournal.readResumePoint(path: journal, total: count, inputsFile: inputsFile, job: "t", returns: spec,
                                                         roots: sandbox.roots)
        }

        func sectors(_ set: SectorSet) -> [Int] { (0..<count).filter { set.contains($0) } }
    }

    func message(_ count: Int, first: String) -> String {
        count == 1
            ? "resume: 1 sector runs again, its returned files changed or are gone (first: \(first))"
            : "resume: \(count) sectors run again, their returned files changed or are gone (first: \(first))"
    }

    @Test func sectorsWhoseFilesAreIntactAreDone() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 1, 2])
            #expect(point.filesRerun == 0)
            #expect(point.filesMessage == nil)
            #expect(point.fingerprint(of: 1) == inputFingerprint(Scan.input(1)))
        }
    }

    @Test func aDeletedFileRunsItsSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            try FileManager.default.removeItem(atPath: scan.here(Scan.output(1)))
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 2])
            #expect(point.count == 2)
            #expect(point.filesRerun == 1)
            #expect(point.filesMessage == message(1, first: "photos/a1.jpg.out is missing"))
            #expect(point.fingerprint(of: 1) == nil)
        }
    }

    @Test func aTruncatedFileRunsItsSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            let recorded = try scan.run()
            _ = try scan.write(ReturnSandbox.random(Int(recorded[2].size) - 1, seed: 2), at: Scan.output(2))
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 1])
            #expect(point.filesMessage == message(1, first: "photos/a2.jpg.out changed (size)"))
        }
    }

    @Test func aFileAlteredToTheSameSizeRunsItsSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            var bytes = try #require(sandbox.bytes(scan.here(Scan.output(0))))
            bytes[bytes.count / 2] ^= 0x01
            _ = try scan.write(bytes, at: Scan.output(0))
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [1, 2])
            #expect(point.filesMessage == message(1, first: "photos/a0.jpg.out changed (SHA-256)"))
        }
    }

    /// The link leads to the very same bytes: only a check that never follows one re-runs it.
    @Test func aFileReplacedByASymbolicLinkRunsItsSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            let target = scan.here(Scan.output(1))
            try FileManager.default.moveItem(atPath: target, toPath: sandbox.outside + "/copy.out")
            try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: sandbox.outside + "/copy.out")
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [0, 2])
            #expect(point.filesMessage == message(1, first: "photos/a1.jpg.out is a symbolic link"))
        }
    }

    @Test func aDirectoryReplacedByASymbolicLinkRunsEverySectorInItAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 2)
            try scan.run()
            try FileManager.default.moveItem(atPath: scan.here("photos"), toPath: sandbox.outside + "/photos")
            try FileManager.default.createSymbolicLink(atPath: scan.here("photos"), withDestinationPath: sandbox.outside + "/photos")
            let point = try await scan.resume()
            #expect(scan.sectors(point.sectors) == [])
            #expect(point.filesMessage == message(2, first: "photos/a0.jpg.out passes through a symbolic link or a file (photos)"))
        }
    }

    @Test func aFileReplacedByADirectoryRunsItsSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 1)
            try scan.run()
            try FileManager.default.removeItem(atPath: scan.here(Scan.output(0)))
            try FileManager.default.createDirectory(atPath: scan.here(Scan.output(0)), withIntermediateDirectories: false)
            let point = try await scan.resume()
            #expect(point.filesMessage == message(1, first: "photos/a0.jpg.out is not a regular file"))
        }
    }

    @Test func aTemplateWhoseFileTheEntryDoesNotHoldRunsTheSectorAgain() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            #expect(try await scan.resume(["{}.out"]).filesRerun == 0)
            let point = try await scan.resume(["{}.out", "{.}.log"])
            #expect(scan.sectors(point.sectors) == [])
            #expect(point.filesRerun == 3)
            #expect(point.filesMessage == message(3, first: "photos/a0.log is not in the journal"))
        }
    }

    @Test func withoutReturnTemplatesNothingIsChecked() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 3)
            try scan.run()
            try FileManager.default.removeItem(atPath: scan.here("photos"))
            for templates in [nil, [String]()] {
                let point = try await scan.resume(templates)
                #expect(scan.sectors(point.sectors) == [0, 1, 2])
                #expect(point.filesRerun == 0)
                #expect(point.filesMessage == nil)
            }
            #expect(try await scan.resume().filesRerun == 3)
        }
    }

    @Test func anAbsoluteReturnIsCheckedWhereTheTemplatePutIt() async throws {
        try await ReturnSandbox.with { sandbox in
            let scan = Scan(sandbox: sandbox, count: 1)
            let file = try scan.write(ReturnSandbox.random(300, seed: 9), at: "/data/b c.jpg.out")
            try scan.append([scan.entry(0, text: "/data/b c.jpg", files: [file])])
            #expect(try await scan.resume().filesRerun == 0)
            try FileManager.default.removeItem(atPath: sandbox.abs + "/data/b c.jpg.out")
            #expect(try await scan.resume().filesMessage == message(1, first: "/data/b c.jpg.out is missing"))
        }
    }
}
