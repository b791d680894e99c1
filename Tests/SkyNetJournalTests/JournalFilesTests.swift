import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetJournal
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A journal entry's `files`: written after `seconds` only when there are some, read
/// alike by the fast reader and the full parser, and refused (the line is damaged) when any
/// of it is not a returned file.
@Suite(.onOwnThread)
struct JournalFilesTests {
    static let digest = SHA256.hash(Array("a.jpg.out".utf8))
    static let hex = Secrets.hex(digest)
    static let prefix = #"{"input":3,"text":"photos/a.jpg","job":"t","status":0,"result":"","system":"gpu1","attempt":1,"seconds":0.41"#

    func fast(_ bytes: [UInt8]) -> ScanJournal.Entry? {
        bytes.withUnsafeBufferPointer { ScanJournal.Entry(journalLine: $0) }
    }

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("journal-files-\(UUID().uuidString)").path
    }

    func journal() throws -> (ScanJournal, path: String) {
        let path = temporaryPath()
        return (try ScanJournal(path: path), path)
    }

    @Test func anEntryWritesItsFilesAfterSecondsAndBothReadersReadThem() throws {
        let (journal, path) = try journal()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let files = [ReturnedFile(path: "photos/a.jpg.out", size: 4_194_304, sha256: Self.digest),
                     ReturnedFile(path: "/data/b c.log", size: 0, sha256: SHA256.hash([]))]
        let entry = ScanJournal.Entry(input: 3, text: "photos/a.jpg", job: "t", result: "", system: "gpu1", attempt: 1, seconds: 0.41,
                                      files: files)
        let line = journal.line(for: entry)
        let expected = Self.prefix + #","files":[{"path":"photos/a.jpg.out","size":4194304,"sha256":"\#(Self.hex)"},"#
            + #"{"path":"/data/b c.log","size":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]}"# + "\n"
        #expect(String(decoding: line, as: UTF8.self) == expected)
        #expect(fast(Array(line.dropLast())) == entry)
        #expect(ScanJournal.parse(line.dropLast()) == entry)

        let plain = ScanJournal.Entry(input: 3, result: "r", system: "gpu1", attempt: 1, seconds: 0.5)
        #expect(!String(decoding: journal.line(for: plain), as: UTF8.self).contains("files"))
        try journal.append(entry)
        try journal.append(plain)
        #expect(try ScanJournal.read(path: path).entries == [entry, plain])
    }

    /// Seeded entries with paths of every kind: the full parser reads each back exactly; the fast
    /// reader reads those without escapes the same way, and leaves the others to it.
    @Test func seededEntriesWithFilesComeBackTheSameFromBothReaders() throws {
        let (journal, path) = try journal()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let seed = FuzzSeed(21)
        var random = seed.random
        let parts = ["photos", "a.jpg", "b c", "é.png", #"q"uote"#, #"back\slash"#, "tab\there", "x.out", "2024", ".hidden"]
        var fastRead = 0
        for round in 0..<400 {
            let files = (0..<Int.random(in: 0...3, using: &random)).map { _ in
                let path = (Bool.random(using: &random) ? "/" : "")
                    + (0..<Int.random(in: 1...3, using: &random)).map { _ in parts.randomElement(using: &random) ?? "a" }.joined(separator: "/")
                let size = Bool.random(using: &random) ? Int64.random(in: 0...9, using: &random) : Int64.random(in: 0...(1 << 40), using: &random)
                return ReturnedFile(path: path, size: size, sha256: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            let entry = ScanJournal.Entry(input: round, text: "in-\(round)", job: "t", result: "r\(round)", system: "node",
                                          attempt: 1, seconds: Double(round) / 8, files: files)
            let line = Array(journal.line(for: entry).dropLast())
            #expect(ScanJournal.parse(line) == entry, "\(seed): \(String(decoding: line, as: UTF8.self))")
            let escaped = files.contains { $0.path.contains("\"") || $0.path.contains("\\") || $0.path.contains("\t") }
            if escaped {
                #expect(fast(line) == nil, "\(seed)")
            } else {
                #expect(fast(line) == entry, "\(seed): \(String(decoding: line, as: UTF8.self))")
                fastRead += 1
            }
        }
        #expect(fastRead > 100, "\(seed)")
    }

    /// Mutated lines with files: whatever the fast reader accepts, the full parser reads the same.
    @Test func theFastReaderNeverDisagreesWithTheFullParserOnFiles() {
        let seed = FuzzSeed(2121)
        var random = seed.random
        let written = Array((Self.prefix + #","files":[{"path":"a.out","size":12,"sha256":"\#(Self.hex)"},{"path":"b","size":0,"sha256":"\#(Self.hex)"}]}"#).utf8)
        #expect(fast(written) != nil)
        let replacements = Array("0123456789abcdef-.\"\\}{][, /".utf8), insertions = Array("0123456789af\"[],".utf8)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = written
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                // Mutate the files part mostly: that is the tail this reader learned.
                let at = Int.random(in: (Self.prefix.utf8.count - 8)..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = replacements.randomElement(using: &random) ?? 0
                case 1: bytes.remove(at: at)
                default: bytes.insert(insertions.randomElement(using: &random) ?? 0, at: at)
                }
            }
            guard let entry = fast(bytes) else { continue }
            accepted += 1
            #expect(ScanJournal.parse(bytes) == entry, "\(seed): \(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(accepted > 100, "\(seed)")
    }

    @Test(arguments: [
        #""files":{"path":"a","size":1,"sha256":"H"}"#,
        #""files":"a""#,
        #""files":[1]"#,
        #""files":[{"path":"../x","size":1,"sha256":"H"}]"#,
        #""files":[{"path":"a/../b","size":1,"sha256":"H"}]"#,
        #""files":[{"path":"","size":1,"sha256":"H"}]"#,
        #""files":[{"path":"a\nb","size":1,"sha256":"H"}]"#,
        #""files":[{"path":"a\u0000b","size":1,"sha256":"H"}]"#,
        #""files":[{"path":"a","size":-1,"sha256":"H"}]"#,
        #""files":[{"path":"a","size":1.5,"sha256":"H"}]"#,
        #""files":[{"path":"a","size":"1","sha256":"H"}]"#,
        #""files":[{"path":"a","sha256":"H"}]"#,
        #""files":[{"path":"a","size":1}]"#,
        #""files":[{"path":"a","size":1,"sha256":"H0"}]"#,
        #""files":[{"path":"a","size":1,"sha256":"0123"}]"#,
        #""files":[{"path":"a","size":1,"sha256":"UPPER"}]"#,
        #""files":[{"path":"a","size":1,"sha256":"NOTHEX"}]"#,
        #""files":[{"size":1,"sha256":"H"}]"#,
    ])
    func aBadFilesFieldMakesTheLineDamaged(_ files: String) throws {
        let text = (Self.prefix + "," + files + "}")
            .replacingOccurrences(of: "\"UPPER\"", with: "\"\(Self.hex.uppercased())\"")
            .replacingOccurrences(of: "\"NOTHEX\"", with: "\"\(String(Self.hex.dropLast()))g\"")
            .replacingOccurrences(of: "\"H0\"", with: "\"\(Self.hex)0\"")
            .replacingOccurrences(of: "\"H\"", with: "\"\(Self.hex)\"")
        let line = Array(text.utf8)
        #expect(fast(line) == nil)
        #expect(ScanJournal.parse(line) == nil)
        // The same line with a valid `files` is an entry: the refusal is the field's.
        let valid = Array((Self.prefix + #","files":[{"path":"a","size":1,"sha256":"\#(Self.hex)"}]}"#).utf8)
        #expect(ScanJournal.parse(valid) != nil)

        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try (text + "\n" + String(decoding: valid, as: UTF8.self) + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        let read = try ScanJournal.read(path: path)
        #expect(read.skipped == 1)
        #expect(read.entries.map(\.files.count) == [1])
    }

    @Test func moreFilesThanAScanMayReturnMakeTheLineDamaged() {
        let one = #"{"path":"a","size":1,"sha256":"\#(Self.hex)"}"#
        let line = { (count: Int) in Array((Self.prefix + #","files":["# + Array(repeating: one, count: count).joined(separator: ",") + "]}").utf8) }
        #expect(fast(line(TransferSpec.maxReturns))?.files.count == TransferSpec.maxReturns)
        #expect(ScanJournal.parse(line(TransferSpec.maxReturns))?.files.count == TransferSpec.maxReturns)
        #expect(fast(line(TransferSpec.maxReturns + 1)) == nil)
        #expect(ScanJournal.parse(line(TransferSpec.maxReturns + 1)) == nil)
    }

    @Test func anEmptyOrNullFilesFieldReadsAsNoFiles() {
        for files in [#""files":[]"#, #""files":null"#] {
            let line = Array((Self.prefix + "," + files + "}").utf8)
            #expect(ScanJournal.parse(line)?.files == [])
            #expect(ScanJournal.parse(line)?.input == 3)
        }
    }
}
