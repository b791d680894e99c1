import Foundation
@testable import SkyNetCluster
@testable import SkyNetJournal
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// On `--resume`, each template's path is matched to what the journal recorded of it byte for
/// byte: `café` in NFC and in NFD (equal as Swift strings) are two files, each with its own record.
struct JournalReturnedFileNamesTests {
    @Test func eachTargetIsMatchedToItsOwnRecord() throws {
        let nfc = "caf\u{e9}-x", nfd = "cafe\u{301}-x"
        let spec = TransferSpec(returns: [try ReturnTemplate("caf\u{e9}-{}"), try ReturnTemplate("cafe\u{301}-{}")])
        let files = [ReturnedFile(path: nfc, size: 3, sha256: [1]), ReturnedFile(path: nfd, size: 5, sha256: [2])]
        let entry = ScanJournal.Entry(input: 0, text: "x", job: "t", result: "", system: "node1", attempt: 1, seconds: 0, files: files)
        guard case .check(let targets) = ScanJournal.ResumeFiles.targets(of: entry, spec: spec) else {
            Issue.record("not checked")
            return
        }
        #expect(targets.map { Array($0.target.text.utf8) } == [Array(nfc.utf8), Array(nfd.utf8)])
        #expect(targets.map(\.recorded.size) == [3, 5])
    }
}
