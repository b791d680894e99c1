import Foundation
import Testing
@testable import SkyNetRuntime

/// The file calls below a held directory: nothing is created through a link or outside, a
/// tree is removed without following links, files are created exclusively, a FIFO is not
/// opened as a file, and free space is what statvfs says.
@Suite(.onOwnThread) struct DirectoryHandleTests {
    /// A fresh sandbox `root/` (the handle's tree) beside `outside/`, removed afterwards.
    private func withSandbox(_ body: (_ root: DirectoryHandle, _ rootPath: String, _ outside: String) throws -> Void) throws {
        let (base, basePath) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-dirtest-")
        defer { _ = base; try? FileManager.default.removeItem(atPath: basePath) }
        try FileManager.default.createDirectory(atPath: basePath + "/root", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: basePath + "/outside", withIntermediateDirectories: false)
        try body(try DirectoryHandle.open(basePath + "/root"), basePath + "/root", basePath + "/outside")
    }

    private func list(_ path: String) -> [String] {
        (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []).sorted()
    }

    private func write(_ text: String, to file: OpenFile) throws {
        try Array(text.utf8).withUnsafeBytes { try file.write($0, at: 0) }
    }

    @Test func mkdtempMakesAPrivateDirectory() throws {
        let (handle, path) = try DirectoryHandle.mkdtemp(in: NSTemporaryDirectory(), prefix: "skynet-mkdtemp-")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        #expect(path.hasPrefix(NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"))
        #expect(try handle.freeBytes() > 0)
    }

    @Test func directoriesAreMadeAndFilesWrittenComponentByComponent() throws {
        try withSandbox { root, rootPath, _ in
            let photos = try root.directory(["photos", "", ".", "2024"], create: true)
            let file = try photos.createFile("a b'\"é.jpg")
            try write("hello", to: file)
            try file.finish(mode: 0o755, mtimeNanoseconds: 1_732_441_234_123_456_789)
            let status = try file.status()
            #expect(status.size == 5 && status.isRegular && status.mode == 0o755)
            #expect(status.mtimeNanoseconds == 1_732_441_234_123_456_789)
            file.close()
            #expect(throws: FileError.self) { try file.status() }
            #expect(try String(contentsOfFile: rootPath + "/photos/2024/a b'\"é.jpg", encoding: .utf8) == "hello")
            let again = try root.directory(["photos", "2024"], create: false).openFile("a b'\"é.jpg")
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = try buffer.withUnsafeMutableBytes { try again.read(into: $0, at: 1) }
            #expect(Array(buffer.prefix(count)) == Array("ello".utf8))
        }
    }

    /// Directories are private (0700) unless the caller asks for more (a returned file's:
    /// 0777, less the umask, which `mkdirat` applies); one already there keeps its mode.
    @Test func directoriesAreMadePrivateUnlessAModeIsGiven() throws {
        try withSandbox { root, rootPath, _ in
            _ = try root.directory(["work", "task"], create: true)
            _ = try root.directory(["out"], create: true, mode: 0o755)
            _ = try root.directory(["out", "deeper"], create: true, mode: 0o750)
            func mode(_ path: String) throws -> Int? {
                try FileManager.default.attributesOfItem(atPath: rootPath + "/" + path)[.posixPermissions] as? Int
            }
            #expect(try mode("work") == 0o700 && mode("work/task") == 0o700)
            let umask = Umask.current
            #expect(try mode("out") == 0o755 & ~umask && mode("out/deeper") == 0o750 & ~umask)
            _ = try root.directory(["work"], create: true, mode: 0o777)
            #expect(try mode("work") == 0o700)
        }
    }

    @Test func aSymlinkedDirectoryOnTheWayIsRefusedAndNothingIsMadeOutside() throws {
        try withSandbox { root, rootPath, outside in
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/photos", withDestinationPath: outside)
            #expect(throws: FileError.self) { try root.directory(["photos", "new"], create: true) }
            do {
                _ = try root.directory(["photos"], create: true)
                Issue.record("opened a link")
            } catch let error as FileError {
                #expect(error.code == ELOOP || error.code == ENOTDIR)
                #expect(error.path == "photos")
            } catch {
                Issue.record("\(error)")
            }
            #expect(throws: FileError.self) { try root.createFile("photos") }
            #expect(list(outside).isEmpty)
        }
    }

    @Test func dotDotAndSlashesAreRefused() throws {
        try withSandbox { root, _, outside in
            for components in [[".."], ["a", ".."], ["a/b"], ["a\0b"]] {
                #expect(throws: FileError.self) { try root.directory(components, create: true) }
            }
            for name in ["..", ".", "", "a/b", "../x"] {
                #expect(throws: FileError.self) { try root.createFile(name) }
            }
            #expect(list(outside).isEmpty)
        }
    }

    @Test func createIsExclusiveAndNeverFollowsALink() throws {
        try withSandbox { root, rootPath, outside in
            _ = try root.createFile("once")
            #expect { try root.createFile("once") } throws: { ($0 as? FileError)?.code == EEXIST }
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/link", withDestinationPath: outside + "/target")
            #expect(throws: FileError.self) { try root.createFile("link") }
            #expect(list(outside).isEmpty)
        }
    }

    @Test func aLinkAFIFOAndADirectoryAreNotOpenedAsFiles() throws {
        try withSandbox { root, rootPath, outside in
            _ = FileManager.default.createFile(atPath: outside + "/secret", contents: Data("x".utf8))
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/out", withDestinationPath: outside + "/secret")
            #expect { try root.openFile("out") } throws: { ($0 as? FileError)?.isSymbolicLink == true }
            #expect(mkfifo(rootPath + "/fifo", 0o600) == 0)
            #expect { try root.openFile("fifo") } throws: { ($0 as? FileError)?.reason == "not a regular file" }
            _ = try root.directory(["dir"], create: true)
            #expect(throws: FileError.self) { try root.openFile("dir") }
            #expect { try root.openFile("missing") } throws: { ($0 as? FileError)?.code == ENOENT }
        }
    }

    @Test func removeTreeLeavesWhatItsLinksPointAtIntact() throws {
        try withSandbox { root, rootPath, outside in
            _ = FileManager.default.createFile(atPath: outside + "/keep", contents: Data("keep".utf8))
            try FileManager.default.createDirectory(atPath: outside + "/sub", withIntermediateDirectories: false)
            _ = FileManager.default.createFile(atPath: outside + "/sub/keep2", contents: Data("2".utf8))
            let task = try root.directory(["task-1", "deep", "er"], create: true)
            _ = try task.createFile("file")
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/task-1/up", withDestinationPath: outside)
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/task-1/deep/f", withDestinationPath: outside + "/keep")
            try FileManager.default.createSymbolicLink(atPath: rootPath + "/task-1/dangling", withDestinationPath: "/nonexistent")
            let outsideBefore = list(outside)
            root.removeTree("task-1")
            #expect(list(rootPath).isEmpty)
            #expect(list(outside) == outsideBefore)
            #expect(try String(contentsOfFile: outside + "/sub/keep2", encoding: .utf8) == "2")
            root.removeTree("task-1")  // gone: nothing happens
        }
    }

    @Test func removeTreeRemovesATreeDeeperThanItsDescriptorBudget() throws {
        try withSandbox { root, rootPath, _ in
            let depth = DirectoryHandle.removalDepth * 3 + 5
            var current = try root.directory(["deep"], create: true)
            for level in 0..<depth {
                _ = try current.createFile("f\(level)")
                current = try current.directory(["d"], create: true)
            }
            root.removeTree("deep")
            #expect(list(rootPath).count == 0)
        }
    }

    @Test func linkRenameAndRemoveWorkByName() throws {
        try withSandbox { root, rootPath, _ in
            let base = try root.directory(["base"], create: true)
            let file = try base.createFile("process.sh")
            try write("#!/bin/sh\n", to: file)
            try file.finish(mode: 0o755, mtimeNanoseconds: 0)
            let task = try root.directory(["task"], create: true)
            try base.link("process.sh", to: task, as: "process.sh")
            #expect(try task.openFile("process.sh").status().mode == 0o755)
            _ = try task.createFile(".a.part")
            try task.rename(".a.part", to: "a")
            #expect(list(rootPath + "/task") == ["a", "process.sh"])
            task.remove("a")
            task.remove("missing")
            #expect(list(rootPath + "/task") == ["process.sh"])
        }
    }

    @Test func freeBytesIsWhatStatvfsSays() throws {
        try withSandbox { root, rootPath, _ in
            var info = statvfs()
            #expect(statvfs(rootPath, &info) == 0)
            let expected = Int64(info.f_bavail) * Int64(info.f_frsize)
            let free = try root.freeBytes()
            // Other processes write meanwhile: within 64 MiB of one another.
            #expect(abs(free - expected) < 64 << 20)
        }
    }
}
