import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// One connection's files: its `conn-N` made at the first file, removed once the connection
/// and its last task ended, and its basefiles stored once each.
@Suite(.timeLimit(.minutes(1)))
struct SessionFilesTests {
    private func withSession(free: Int64 = 1 << 40, _ body: (WorkDirSandbox, SessionFiles, NodeFiles) async throws -> Void) async throws {
        try await WorkDirSandbox.with { sandbox in
            let files = NodeFiles(node: "node-x", parent: sandbox.path) { _ in free }
            defer { files.remove() }
            try await body(sandbox, SessionFiles(files: files), files)
        }
    }

    /// Writes `bytes` into an upload's file.
    private func fill(_ file: OpenFile, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
    }

    @Test func theDirectoryIsMadeAtTheFirstFileOnce() async throws {
        try await withSession { sandbox, session, files in
            #expect(!files.hasRoot)
            let directory = try session.directory()
            #expect(try session.directory() === directory)
            #expect(directory.name == "conn-1")
            #expect(sandbox.exists("\(try files.root().name)/conn-1"))
        }
    }

    @Test func anEndedConnectionsDirectoryGoesAtOnceWhenNothingRuns() async throws {
        try await withSession { sandbox, session, files in
            let directory = try session.directory()
            try sandbox.write("\(try files.root().name)/conn-1/task-0-1/a", [1])
            session.connectionEnded()
            try await withTimeout(.seconds(10)) { await session.removed.value }
            #expect(!sandbox.exists("\(try files.root().name)/\(directory.name)"))
            #expect(!session.begin(), "nothing new starts on an ended connection")
            #expect(throws: ScanFailure(code: .cancelled, message: "the connection ended")) { try session.directory() }
        }
    }

    @Test func theDirectoryWaitsForTheLastTaskOfAnEndedConnection() async throws {
        try await withSession { sandbox, session, files in
            _ = try session.directory()
            let conn = "\(try files.root().name)/conn-1"
            #expect(session.begin() && session.begin())
            session.connectionEnded()
            session.end()
            #expect(session.removed.current == nil && sandbox.exists(conn), "one task still runs in it")
            session.end()
            try await withTimeout(.seconds(10)) { await session.removed.value }
            #expect(!sandbox.exists(conn))
        }
    }

    @Test func aConnectionThatNeverSentAFileLeavesNothingToRemove() async throws {
        try await withSession { sandbox, session, files in
            session.connectionEnded()
            #expect(!files.hasRoot)
            #expect(session.removed.current == nil)
        }
    }

    @Test func aBasefileIsStoredOnceAndKeptByName() async throws {
        try await withSession { sandbox, session, files in
            let upload = try BasefileUpload.prepare("tools/process.sh", size: 3, session: session, maxFileSize: 1 << 30)
            #expect(files.space.reservedBytes == 3)
            try fill(upload.file, [1, 2, 3])
            upload.stored()
            #expect(files.space.reservedBytes == 0)
            #expect(session.basefiles.map(\.text) == ["tools/process.sh"])
            #expect(sandbox.read("\(try files.root().name)/conn-1/base/tools/process.sh") == [1, 2, 3])
            #expect(throws: ScanFailure(code: .badRequest, message: #"path "./tools//process.sh": a basefile of that name was stored already"#)) {
                try BasefileUpload.prepare("./tools//process.sh", size: 1, session: session, maxFileSize: 1 << 30)
            }
            #expect(sandbox.read("\(try files.root().name)/conn-1/base/tools/process.sh") == [1, 2, 3])
            // The connection ends with nothing live: its directory, basefiles too, goes.
            session.connectionEnded()
            try await withTimeout(.seconds(10)) { await session.removed.value }
            #expect(!sandbox.exists("\(try files.root().name)/conn-1"))
        }
    }

    @Test func aBasefileThatFailsLeavesNoPartialFile() async throws {
        try await withSession { sandbox, session, files in
            let upload = try BasefileUpload.prepare("model.bin", size: 10, session: session, maxFileSize: 1 << 30)
            try fill(upload.file, [1, 2])
            #expect(throws: ScanFailure(code: .badRequest, message: #"path "model.bin": a basefile of that name is arriving already"#)) {
                try BasefileUpload.prepare("model.bin", size: 10, session: session, maxFileSize: 1 << 30)
            }
            upload.discard()
            upload.discard()  // twice: nothing more
            #expect(!sandbox.exists("\(try files.root().name)/conn-1/base/model.bin"))
            #expect(session.basefiles.isEmpty)
            #expect(files.space.reservedBytes == 0)
            // The discarded upload no longer holds the directory.
            session.connectionEnded()
            try await withTimeout(.seconds(10)) { await session.removed.value }
        }
    }

    @Test func aBasefileIsRefusedForItsPathSizeOrRoom() async throws {
        try await withSession(free: 3 << 20) { sandbox, session, files in
            let cases: [(String, Int64, ScanFailure)] = [
                ("../x", 1, ScanFailure(code: .badRequest, message: #"path "../x": a ".." component is refused"#)),
                ("a\nb", 1, ScanFailure(code: .badRequest, message: #"path "a\x0ab": a name with a newline is refused"#)),
                ("big.bin", 2048, ScanFailure(code: .fileTooLarge, message: "big.bin is 2 KiB, over node-x's --max-file-size 1 KiB")),
            ]
            for (path, size, failure) in cases {
                #expect(throws: failure) { try BasefileUpload.prepare(path, size: size, session: session, maxFileSize: 1024) }
            }
            #expect(throws: ScanFailure(code: .noSpace, message: "no space on node-x: 3 MiB free, 4 MiB needed")) {
                try BasefileUpload.prepare("m.bin", size: 4 << 20, session: session, maxFileSize: 1 << 30)
            }
            let root = try files.root().name
            #expect(sandbox.tree("\(root)/conn-1").filter { $0.value != "dir" }.isEmpty)
            #expect(session.begin(), "no refusal left the connection holding live work")
            session.end()
        }
    }

    @Test func aBasefileThroughALinkInBaseIsRefused() async throws {
        try await withSession { sandbox, session, files in
            try sandbox.makeDirectory("outside")
            _ = try session.directory()
            try sandbox.symlink("\(try files.root().name)/conn-1/base/lib", to: sandbox.at("outside"))
            #expect(throws: ScanFailure(code: .badRequest, message: "lib/x.so passes through a symbolic link (lib)")) {
                try BasefileUpload.prepare("lib/x.so", size: 1, session: session, maxFileSize: 1 << 30)
            }
            #expect(sandbox.tree("outside").isEmpty)
        }
    }
}
