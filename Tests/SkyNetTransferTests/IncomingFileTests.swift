import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A file being received: byte-exact with its digest, and every way a sender can get it wrong
/// is `bad-file`, with what was written removed on `discard`.
@Suite(.onOwnThread) struct IncomingFileTests {
    private let bytes = Array("hello, files".utf8)

    private func receive(digests: Bool = true, _ body: (IncomingFile, String) throws -> Void) throws {
        let (directory, path) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-incoming-")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try directory.createFile("in")
        let header = FileHeader(size: Int64(bytes.count), mode: 0o4755, mtimeNanoseconds: 1_500_000_000_250_000_000)
        try body(IncomingFile(file: file, header: header, name: "photos/in", digests: digests, discarding: { directory.remove("in") }), path + "/in")
    }

    private func chunk(_ offset: Int, _ slice: ArraySlice<UInt8>) -> FileChunk {
        FileChunk(id: 1, file: nil, offset: Int64(offset), bytes: Data(slice))
    }

    @Test func chunksInOrderMakeTheFileWithItsTimeAndASafeMode() throws {
        try receive { incoming, path in
            try incoming.append(chunk(0, bytes[0..<5]))
            try incoming.append(chunk(5, bytes[5...]))
            try incoming.finish(FileEnd(id: 1, file: nil, sha256: SHA256.hash(bytes)))
            #expect(FileManager.default.contents(atPath: path) == Data(bytes))
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o755)  // no setuid
            #expect((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 == 1_500_000_000.25)
        }
    }

    @Test func onALinkThatChecksItselfNoDigestIsAskedFor() throws {
        try receive(digests: false) { incoming, path in
            try incoming.append(chunk(0, bytes[...]))
            try incoming.finish(FileEnd(id: 1, file: nil, sha256: nil))
            #expect(FileManager.default.contents(atPath: path) == Data(bytes))
        }
        // Version 1 needs one: an end without it is refused, as a wrong one is.
        try receive { incoming, path in
            try incoming.append(chunk(0, bytes[...]))
            #expect(throws: ScanFailure.self) { try incoming.finish(FileEnd(id: 1, file: nil, sha256: nil)) }
            incoming.discard()
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func aGapBytesPastTheSizeAnEarlyEndOrAnotherDigestAreBadFiles() throws {
        let failures: [(IncomingFile) throws -> Void] = [
            { try $0.append(self.chunk(1, self.bytes[1...])) },
            { try $0.append(self.chunk(0, (self.bytes + [0])[...])) },
            { try $0.append(self.chunk(0, self.bytes[0..<3])); _ = try $0.finish(FileEnd(id: 1, file: nil, sha256: SHA256.hash(self.bytes))) },
            { try $0.append(self.chunk(0, self.bytes[...])); _ = try $0.finish(FileEnd(id: 1, file: nil, sha256: SHA256.hash([1]))) },
        ]
        for failing in failures {
            try receive { incoming, path in
                #expect { try failing(incoming) } throws: { error in
                    guard let failure = error as? ScanFailure else { return false }
                    return failure.code == .badFile && failure.message.hasPrefix("photos/in arrived altered: ")
                }
                incoming.discard()
                #expect(!FileManager.default.fileExists(atPath: path))
            }
        }
    }
}
