import Foundation
import Testing
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWire
@testable import SkyNetWork

/// A returned file is written only at its target, through a hidden `.part` renamed into place
/// (never half there), with the node's x bit and time; a link on the way is refused, and every
/// failure leaves nothing behind.
@Suite(.onOwnThread) struct ReturnWriterTests {
    private let mtime: Int64 = 1_732_441_234_123_456_789

    private func header(_ size: Int, mode: Int = 0o644) -> FileHeader {
        FileHeader(size: Int64(size), mode: mode, mtimeNanoseconds: mtime)
    }

    private func writer(_ target: String, _ size: Int, mode: Int = 0o644, max: Int64 = 1 << 30, in sandbox: ReturnSandbox,
                        free: Int64? = nil) throws -> ReturnWriter {
        try ReturnWriter(target: try TransferPath(target), header: header(size, mode: mode), maxSize: max, peer: "gpu1",
                         roots: sandbox.roots, freeSpace: { handle in
                             if let free { return free }
                             return try handle.freeBytes()
                         })
    }

    private func feed(_ bytes: [UInt8], to writer: inout ReturnWriter, chunk: Int = 65_536) throws {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            try writer.append(FileChunk(id: 1, file: 0, offset: Int64(offset), bytes: Data(bytes[offset..<end])), peer: "gpu1")
            offset = end
        }
    }

    @Test func aFileAppearsAtItsTargetOnlyOnceCommitted() throws {
        try ReturnSandbox.with { sandbox in
            let bytes = ReturnSandbox.random(1 << 20 | 1, seed: 21)
            var writer = try writer("photos/2024/a b'é.png", bytes.count, mode: 0o700, in: sandbox)
            try feed(bytes, to: &writer)
            let target = sandbox.here + "/photos/2024/a b'é.png"
            // Every byte is there, yet under a hidden temporary name only.
            #expect(!FileManager.default.fileExists(atPath: target))
            let parts = sandbox.parts(in: sandbox.here + "/photos/2024")
            #expect(parts.count == 1 && parts[0].hasPrefix(".a b'é.png.skynet-"))
            let returned = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes)), peer: "gpu1")
            #expect(returned == ReturnedFile(path: "photos/2024/a b'é.png", size: Int64(bytes.count), sha256: SHA256.hash(bytes)))
            try writer.commit()
            #expect(sandbox.bytes(target) == bytes)
            #expect(sandbox.parts(in: sandbox.here + "/photos/2024").isEmpty)
            let attributes = try FileManager.default.attributesOfItem(atPath: target)
            #expect(attributes[.posixPermissions] as? Int == 0o755)  // an x bit on the node: 0755, never 0700 or setuid
            let status = try DirectoryHandle.open(sandbox.here + "/photos/2024").openFile("a b'é.png").status()
            #expect(status.mtimeNanoseconds == mtime)
        }
    }

    @Test func anEmptyFileAndAFileWithoutXBitsAreWritten() throws {
        try ReturnSandbox.with { sandbox in
            var writer = try writer("empty", 0, mode: 0o4777 & ~0o111, in: sandbox)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([])), peer: "gpu1")
            try writer.commit()
            #expect(sandbox.bytes(sandbox.here + "/empty") == [])
            #expect(try FileManager.default.attributesOfItem(atPath: sandbox.here + "/empty")[.posixPermissions] as? Int == 0o644)
        }
    }

    @Test func anExistingTargetIsReplacedWhole() throws {
        try ReturnSandbox.with { sandbox in
            try "old content, longer than the new".write(toFile: sandbox.here + "/out.txt", atomically: false, encoding: .utf8)
            let bytes = Array("new".utf8)
            var writer = try writer("out.txt", bytes.count, in: sandbox)
            try feed(bytes, to: &writer)
            // Until the commit the old file is whole.
            #expect(sandbox.bytes(sandbox.here + "/out.txt") == Array("old content, longer than the new".utf8))
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes)), peer: "gpu1")
            try writer.commit()
            #expect(sandbox.bytes(sandbox.here + "/out.txt") == bytes)
        }
    }

    @Test func anAbsoluteTargetStartsAtTheAbsoluteRoot() throws {
        try ReturnSandbox.with { sandbox in
            let bytes = Array("absolute".utf8)
            var writer = try writer("/data/out/a.txt", bytes.count, in: sandbox)
            try feed(bytes, to: &writer)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes)), peer: "gpu1")
            try writer.commit()
            #expect(sandbox.bytes(sandbox.abs + "/data/out/a.txt") == bytes)
            #expect(!FileManager.default.fileExists(atPath: sandbox.here + "/data"))
        }
    }

    @Test func aLinkOnTheWayIsRefusedAndNothingIsWrittenThroughIt() throws {
        try ReturnSandbox.with { sandbox in
            try FileManager.default.createSymbolicLink(atPath: sandbox.here + "/photos", withDestinationPath: sandbox.outside)
            let before = sandbox.tree()
            do {
                _ = try writer("photos/new/a.png", 3, in: sandbox)
                Issue.record("wrote through a link")
            } catch let error as ScanFailure {
                #expect(error.code == .badFile && error.isFinal)
                #expect(error.message.contains("photos/new/a.png cannot be written here"))
            }
            #expect(sandbox.tree() == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.outside) == ["keep.txt"])
        }
    }

    @Test func aWrongDigestFailsAndDiscardLeavesNothing() throws {
        try ReturnSandbox.with { sandbox in
            let before = sandbox.tree()
            let bytes = ReturnSandbox.random(100_000, seed: 3)
            var writer = try writer("sub/a.bin", bytes.count, in: sandbox)
            try feed(bytes, to: &writer)
            var altered = SHA256.hash(bytes)
            altered[0] ^= 1
            do {
                _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: altered), peer: "gpu1")
                Issue.record("accepted a wrong digest")
            } catch let error as ScanFailure {
                #expect(error.code == .badFile)
                #expect(error.message == "sub/a.bin arrived altered: SHA-256 \(Secrets.hex(SHA256.hash(bytes))), sent as \(Secrets.hex(altered))")
            }
            #expect(throws: ScanFailure.self) { try writer.commit() }
            writer.discard()
            // The directory made on the way may stay; no file of ours does.
            #expect(sandbox.parts(in: sandbox.here + "/sub").isEmpty)
            #expect(sandbox.tree().filter { !before.contains($0) } == ["here/sub"])
        }
    }

    @Test func offsetsOutOfOrderBytesBeyondTheSizeAndAnEarlyEndAreRefused() throws {
        try ReturnSandbox.with { sandbox in
            var gap = try writer("a", 10, in: sandbox)
            #expect(throws: ScanFailure(code: .badReply, message: "gpu1 sent a at offset 5, not 0")) {
                try gap.append(FileChunk(id: 1, file: 0, offset: 5, bytes: Data([1])), peer: "gpu1")
            }
            gap.discard()
            var beyond = try writer("b", 2, in: sandbox)
            #expect(throws: ScanFailure(code: .badReply, message: "gpu1 sent more of b than its 2 bytes")) {
                try beyond.append(FileChunk(id: 1, file: 0, offset: 0, bytes: Data([1, 2, 3])), peer: "gpu1")
            }
            beyond.discard()
            var early = try writer("c", 2, in: sandbox)
            try early.append(FileChunk(id: 1, file: 0, offset: 0, bytes: Data([1])), peer: "gpu1")
            #expect(throws: ScanFailure(code: .badReply, message: "gpu1 ended c after 1 of its 2 bytes")) {
                _ = try early.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([1])), peer: "gpu1")
            }
            early.discard()
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.here).isEmpty)
        }
    }

    @Test func tooLittleSpaceOrTooLargeAFileIsRefusedBeforeAnythingIsMade() throws {
        try ReturnSandbox.with { sandbox in
            let before = sandbox.tree()
            #expect(throws: ScanFailure(code: .noSpace, message: "no space here for a.bin: 12 MiB free, 40 MiB needed")) {
                _ = try writer("a.bin", 40 << 20 - 3, in: sandbox, free: 12 << 20 + 5)
            }
            #expect(throws: ScanFailure(code: .badReply, message: "gpu1 sent b.bin as 2.0 MiB, over --max-file-size 1 MiB")) {
                _ = try writer("b.bin", 2 << 20 + 1, max: 1 << 20, in: sandbox)
            }
            #expect(sandbox.tree() == before)
        }
    }

    @Test func aTemporaryNameStaysALegalComponent() {
        let long = String(repeating: "é", count: 127)  // 254 bytes
        let part = ReturnWriter.partName(for: long)
        #expect(part.utf8.count <= TransferPath.maxComponentBytes)
        #expect(part.hasPrefix(".é") && part.hasSuffix(".part"))
        #expect(ReturnWriter.partName(for: "a.png") != ReturnWriter.partName(for: "a.png"))
    }

    @Test func aPartLeftByAKilledCoordinatorGoesButALiveOneStays() throws {
        try ReturnSandbox.with { sandbox in
            let stale = ".a.png.skynet-0badf00d.part"
            try "half".write(toFile: sandbox.here + "/" + stale, atomically: false, encoding: .utf8)
            try "other".write(toFile: sandbox.here + "/.b.png.skynet-0badf00d.part", atomically: false, encoding: .utf8)
            var first = try writer("a.png", 1, in: sandbox)
            #expect(!FileManager.default.fileExists(atPath: sandbox.here + "/" + stale))
            // Another file's leftover is not this target's business.
            #expect(FileManager.default.fileExists(atPath: sandbox.here + "/.b.png.skynet-0badf00d.part"))
            // A second writer of the same target (two inputs returning one path) keeps the first's.
            var second = try writer("a.png", 1, in: sandbox)
            #expect(sandbox.parts(in: sandbox.here).filter { $0.hasPrefix(".a.png.") }.count == 2)
            try first.append(FileChunk(id: 1, file: 0, offset: 0, bytes: Data([7])), peer: "gpu1")
            _ = try first.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([7])), peer: "gpu1")
            try first.commit()
            #expect(sandbox.bytes(sandbox.here + "/a.png") == [7])
            second.discard()
            #expect(sandbox.parts(in: sandbox.here) == [".b.png.skynet-0badf00d.part"])
        }
    }

    @Test func filesArrivingAtOnceDoNotCountTheSameFreeSpaceTwice() throws {
        try ReturnSandbox.with { sandbox in
            let free: Int64 = 10 << 20
            var first = try writer("a.bin", 6 << 20, in: sandbox, free: free)
            #expect(throws: ScanFailure(code: .noSpace, message: "no space here for b.bin: 4 MiB free, 6 MiB needed")) {
                _ = try writer("b.bin", 6 << 20, in: sandbox, free: free)
            }
            first.discard()
            var third = try writer("c.bin", 6 << 20, in: sandbox, free: free)
            third.discard()
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
        }
    }
}
