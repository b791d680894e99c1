import Foundation
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A returned file is written only at its target, through a hidden `.part` renamed into place
/// (never half there), with the node's x bit and time; a link on the way is refused, and every
/// failure leaves nothing behind.
@Suite(.onOwnThread) struct ReturnWriterTests {
    private let mtime: Int64 = 1_732_441_234_123_456_789

    private func header(_ size: Int, mode: Int = 0o644) -> FileHeader {
        FileHeader(size: Int64(size), mode: mode, mtimeNanoseconds: mtime)
    }

    private func writer(_ target: String, _ size: Int, mode: Int = 0o644, max: Int64 = 1 << 30, in sandbox: ReturnSandbox,
                        roots: ReturnRoots? = nil, free: Int64? = nil,
                        digests: ReturnDigests = ReturnDigests(check: true, keep: true)) throws -> ReturnWriter {
        try ReturnWriter(target: try TransferPath(target), header: header(size, mode: mode), maxSize: max, peer: "gpu1",
                         roots: roots ?? sandbox.roots, digests: digests, freeSpace: { handle in
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
            #expect(parts == [".a b'é.png.skynet.part"])
            let returned = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes)), peer: "gpu1")
            #expect(returned == ReturnedFile(path: "photos/2024/a b'é.png", size: Int64(bytes.count), sha256: SHA256.hash(bytes)))
            try writer.commit()
            #expect(sandbox.bytes(target) == bytes)
            #expect(sandbox.parts(in: sandbox.here + "/photos/2024").isEmpty)
            let attributes = try FileManager.default.attributesOfItem(atPath: target)
            #expect(attributes[.posixPermissions] as? Int == 0o700 & ~Self.processUmask())  // as it travelled, less the umask
            let status = try DirectoryHandle.open(sandbox.here + "/photos/2024").openFile("a b'é.png").status()
            #expect(status.mtimeNanoseconds == mtime)
        }
    }

    /// Files version 2: the node sends no digest. One is computed here only when it is kept
    /// (a journal, --json); on version 1 an end without it is a bad reply.
    @Test func aDigestIsCheckedOnVersion1AndComputedOnlyWhenKept() throws {
        try ReturnSandbox.with { sandbox in
            let bytes = ReturnSandbox.random(300_001, seed: 8)
            for keep in [false, true] {
                var writer = try writer("kept-\(keep)", bytes.count, in: sandbox, digests: ReturnDigests(check: false, keep: keep))
                try feed(bytes, to: &writer)
                let returned = try writer.finish(FileEnd(id: 1, file: 0, sha256: nil), peer: "gpu1")
                #expect(returned.sha256 == (keep ? SHA256.hash(bytes) : []))
                try writer.commit()
                #expect(sandbox.bytes(sandbox.here + "/kept-\(keep)") == bytes)
            }
            var checked = try writer("checked", bytes.count, in: sandbox)
            try feed(bytes, to: &checked)
            #expect { try checked.finish(FileEnd(id: 1, file: 0, sha256: nil), peer: "gpu1") } throws: { error in
                (error as? ScanFailure) == ScanFailure(code: .badReply, message: "gpu1 ended checked without its SHA-256")
            }
            checked.discard()
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
        }
    }

    @Test func anEmptyFileAndAFileWithoutXBitsAreWritten() throws {
        try ReturnSandbox.with { sandbox in
            var writer = try writer("empty", 0, mode: 0o4777 & ~0o111, in: sandbox)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([])), peer: "gpu1")
            try writer.commit()
            #expect(sandbox.bytes(sandbox.here + "/empty") == [])
            #expect(try Self.mode(sandbox.here + "/empty") == 0o666 & ~Self.processUmask())  // never setuid
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

    @Test func aTemporaryNameIsOnePerTargetAndStaysALegalComponent() {
        #expect(ReturnWriter.partName(for: "a.png") == ".a.png.skynet.part")
        #expect(ReturnWriter.partName(for: "a.png") == ReturnWriter.partName(for: "a.png"))
        let long = String(repeating: "é", count: 127)  // 254 bytes: no room for the plain name
        let part = ReturnWriter.partName(for: long)
        #expect(part.utf8.count <= TransferPath.maxComponentBytes)
        #expect(part.hasPrefix(".skynet-") && part.hasSuffix(".part") && part == ReturnWriter.partName(for: long))
        #expect(part != ReturnWriter.partName(for: String(repeating: "é", count: 126) + "e"))
        let fits = String(repeating: "x", count: TransferPath.maxComponentBytes - 13)
        #expect(ReturnWriter.partName(for: fits) == ".\(fits).skynet.part")
        #expect(ReturnWriter.partName(for: fits + "x").hasPrefix(".skynet-"))
    }

    @Test func aTargetWithALongNameIsWrittenThroughItsShortPart() throws {
        try ReturnSandbox.with { sandbox in
            let name = String(repeating: "é", count: 127)
            var writer = try writer(name, 2, in: sandbox)
            #expect(sandbox.parts(in: sandbox.here) == [ReturnWriter.partName(for: name)])
            try feed([1, 2], to: &writer)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([1, 2])), peer: "gpu1")
            try writer.commit()
            #expect(sandbox.bytes(sandbox.here + "/" + name) == [1, 2])
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
        }
    }

    /// The stale part of a coordinator killed mid-file (a writer dropped without `discard`, and
    /// one made by hand) is replaced by the next write of the target, in a directory of many
    /// entries that stay as they were; another target's part is not touched.
    @Test func aPartLeftByAKilledCoordinatorIsReplacedByTheNextWrite() throws {
        try ReturnSandbox.with { sandbox in
            let dir = sandbox.here + "/out"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
            let others = 5_000
            for index in 0..<others {
                guard FileManager.default.createFile(atPath: dir + "/entry-\(index)", contents: nil) else {
                    Issue.record("could not make entry \(index)")
                    return
                }
            }
            try "other".write(toFile: dir + "/.b.png.skynet.part", atomically: false, encoding: .utf8)
            do {
                var killed = try writer("out/a.png", 4, in: sandbox)
                try killed.append(FileChunk(id: 1, file: 0, offset: 0, bytes: Data([9, 9])), peer: "gpu1")
            }  // dropped mid-file, never discarded: what a killed coordinator leaves
            #expect(sandbox.parts(in: dir).filter { $0.hasPrefix(".a.png") }.count == 1)
            let bytes = ReturnSandbox.random(70_000, seed: 7)
            var next = try writer("out/a.png", bytes.count, in: sandbox)
            #expect(sandbox.parts(in: dir).filter { $0.hasPrefix(".a.png") }.count == 1)
            try feed(bytes, to: &next)
            _ = try next.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash(bytes)), peer: "gpu1")
            try next.commit()
            #expect(sandbox.bytes(dir + "/a.png") == bytes)
            #expect(sandbox.parts(in: dir) == [".b.png.skynet.part"])
            #expect(sandbox.bytes(dir + "/.b.png.skynet.part") == Array("other".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).count == others + 2)

            // A leftover made by hand at the part's name goes the same way.
            try "half".write(toFile: dir + "/.c.png.skynet.part", atomically: false, encoding: .utf8)
            var third = try writer("out/c.png", 1, in: sandbox)
            try feed([5], to: &third)
            _ = try third.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([5])), peer: "gpu1")
            try third.commit()
            #expect(sandbox.bytes(dir + "/c.png") == [5])
            #expect(sandbox.parts(in: dir) == [".b.png.skynet.part"])
        }
    }

    /// Two writes of one target at once (two inputs whose templates name the same file): the
    /// later one takes the part's name, the earlier one's commit fails (the task runs again)
    /// and never puts its bytes, or the other's half, in place; its discard leaves the other's part.
    @Test func twoWritesOfOneTargetNeverPutTheWrongFileInPlace() throws {
        try ReturnSandbox.with { sandbox in
            var first = try writer("a.bin", 3, in: sandbox)
            var second = try writer("a.bin", 2, in: sandbox)
            #expect(sandbox.parts(in: sandbox.here).count == 1)
            try feed([1, 1, 1], to: &first)
            _ = try first.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([1, 1, 1])), peer: "gpu1")
            do throws(ScanFailure) {
                try first.commit()
                Issue.record("the first write was renamed into place over the second's part")
            } catch {
                #expect(error.code == .badFile && !error.isFinal)
                #expect(error.message.contains("a.bin could not be written"))
            }
            #expect(!FileManager.default.fileExists(atPath: sandbox.here + "/a.bin"))
            first.discard()
            #expect(sandbox.parts(in: sandbox.here).count == 1)
            try feed([2, 2], to: &second)
            _ = try second.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([2, 2])), peer: "gpu1")
            try second.commit()
            #expect(sandbox.bytes(sandbox.here + "/a.bin") == [2, 2])
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
        }
    }

    @Test func aDiscardedWriteLeavesTheLaterWritesPart() throws {
        try ReturnSandbox.with { sandbox in
            var first = try writer("a.bin", 1, in: sandbox)
            var second = try writer("a.bin", 1, in: sandbox)
            first.discard()
            try feed([4], to: &second)
            _ = try second.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([4])), peer: "gpu1")
            try second.commit()
            #expect(sandbox.bytes(sandbox.here + "/a.bin") == [4])
            #expect(sandbox.parts(in: sandbox.here).isEmpty)
        }
    }

    /// This process's umask as the kernel says it (`/proc/self/status`), read apart from the
    /// code under test; 022 where there is no such file.
    private static func processUmask() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("Umask:") {
            return Int(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) ?? 0o022
        }
        return 0o022
    }

    private static func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    /// As `cp` makes them: a returned file gets the mode bits that travelled (never setuid)
    /// less this process's umask, a directory made for it 0777 less the umask.
    @Test func aReturnedFileAndTheDirectoriesMadeForItFollowTheUmask() throws {
        let umask = Self.processUmask()
        try ReturnSandbox.with { sandbox in
            var writer = try writer("made/here/a.txt", 1, mode: 0o4750, in: sandbox)
            try feed([1], to: &writer)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([1])), peer: "gpu1")
            try writer.commit()
            #expect(try Self.mode(sandbox.here + "/made/here/a.txt") == 0o750 & ~umask)
            #expect(try Self.mode(sandbox.here + "/made") == 0o777 & ~umask)
            #expect(try Self.mode(sandbox.here + "/made/here") == 0o777 & ~umask)
        }
    }

    /// The umask the roots carry (the process's, read once) decides: with 077 nothing returned
    /// is readable by anyone else, with 022 a directory made is 0755 (less what the process's
    /// own umask takes too: `mkdirat` applies it).
    @Test(arguments: [0o077, 0o022])
    func theUmaskOfTheRootsDecidesTheModes(_ umask: Int) throws {
        try ReturnSandbox.with { sandbox in
            let roots = ReturnRoots(relative: try DirectoryHandle.open(sandbox.here), absolute: try DirectoryHandle.open(sandbox.abs),
                                    umask: umask)
            var writer = try writer("new/a.txt", 1, mode: 0o664, in: sandbox, roots: roots)
            try feed([1], to: &writer)
            _ = try writer.finish(FileEnd(id: 1, file: 0, sha256: SHA256.hash([1])), peer: "gpu1")
            try writer.commit()
            let file = try Self.mode(sandbox.here + "/new/a.txt")
            let directory = try Self.mode(sandbox.here + "/new")
            if umask == 0o077 {
                #expect(file == 0o600 && directory == 0o700)
            } else {
                #expect(file == 0o644 && directory == 0o755 & ~Self.processUmask())
            }
        }
    }

    @Test func theUmaskIsReadFromTheProcessStatus() {
        #expect(Umask.parse("Name:\tskynet\nUmask:\t0077\nState:\tR (running)\n") == 0o077)
        #expect(Umask.parse("Umask:  0002") == 0o002)
        #expect(Umask.parse("Name:\tskynet\n") == nil)
        #expect(Umask.parse("Umask:\t9") == nil)
        #expect(Umask.current == Self.processUmask())
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
