import Foundation
@testable import SkyNet
@testable import SkyNetCommands
@testable import SkyNetRuntime
@testable import SkyNetWork
import Testing

/// `--basefile` and `--return` given twice: the same path spelled twice (`p.sh`, `./p.sh`,
/// `a//p.sh`) is one file, sent once; names equal only as Swift strings (`café` in NFC and in
/// NFD: two files on disk) are two, each sent.
struct ScanBasefileDedupeTests {
    private static let nfc = "caf\u{e9}.sh"
    private static let nfd = "cafe\u{301}.sh"

    /// A temporary directory holding `p.sh` and the two `café.sh`, made by their bytes.
    private func withFiles(_ body: (String) throws -> Void) throws {
        let (directory, path) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-basefiles-")
        defer { try? FileManager.default.removeItem(atPath: path) }
        for name in ["p.sh", Self.nfc, Self.nfd] { try directory.createFile(name).close() }
        try body(path)
    }

    private func transfer(_ arguments: [String]) throws -> TransferSpec {
        try ScanCommand(arguments: ["--spawn", "1", "--job", "t=cat {}"] + arguments).transfer
    }

    @Test func oneBasefileSpelledThreeWaysIsSentOnce() throws {
        try withFiles { dir in
            let spec = try transfer(["--basefile", dir + "/p.sh", "--basefile", dir + "/./p.sh", "--basefile", dir + "//p.sh"])
            #expect(spec.basefiles.map(\.text) == [dir + "/p.sh"])
        }
    }

    @Test func basefilesEqualOnlyAsCharactersAreBothSent() throws {
        try withFiles { dir in
            let spec = try transfer(["--basefile", dir + "/" + Self.nfc, "--basefile", dir + "/" + Self.nfd])
            #expect(spec.basefiles.map { Array($0.text.utf8) } == [Array((dir + "/" + Self.nfc).utf8), Array((dir + "/" + Self.nfd).utf8)])
        }
    }

    @Test func returnTemplatesEqualOnlyAsCharactersAreBothKept() throws {
        let spec = try transfer(["--return", "caf\u{e9}-{}", "--return", "cafe\u{301}-{}", "--return", "caf\u{e9}-{}"])
        #expect(spec.returns.map { Array($0.text.utf8) } == [Array("caf\u{e9}-{}".utf8), Array("cafe\u{301}-{}".utf8)])
    }
}
