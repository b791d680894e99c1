import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// A node compares basefile paths as it opens them: component by component, byte for byte.
/// `café.sh` in NFC and in NFD (equal as Swift strings) are two basefiles, both stored; the
/// same path spelled again (`./p.sh`) is the one already stored.
@Suite(.timeLimit(.minutes(1)))
struct NodeBasefileNamesTests {
    @Test func workPathsNameTheSameFileByTheirBytes() throws {
        #expect(try WorkPath("./p.sh").namesSameFile(as: WorkPath("p.sh")))
        #expect(try WorkPath("/m//x.bin").namesSameFile(as: WorkPath("m/x.bin")))
        #expect(try !WorkPath("caf\u{e9}.sh").namesSameFile(as: WorkPath("cafe\u{301}.sh")))
        #expect(try !WorkPath("a/b").namesSameFile(as: WorkPath("b/a")))
    }

    @Test func aSessionStoresBasefilesEqualOnlyAsCharactersApart() async throws {
        try await WorkDirSandbox.with { sandbox in
            let files = NodeFiles(node: "node-x", parent: sandbox.path) { _ in 1 << 40 }
            defer { files.remove() }
            let session = SessionFiles(files: files)
            session.addBasefile(try WorkPath("caf\u{e9}.sh"))
            #expect(!session.isBasefile(try WorkPath("cafe\u{301}.sh")))
            #expect(session.isBasefile(try WorkPath("./caf\u{e9}.sh")))
        }
    }
}
