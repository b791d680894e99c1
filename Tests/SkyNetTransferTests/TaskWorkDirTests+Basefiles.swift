import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// Basefiles appear in every task's directory at their own relative path, as hard links that
/// keep the x bit (a copy where a link cannot be made).
@Suite(.timeLimit(.minutes(1)))
struct TaskWorkDirBasefileTests {
    @Test func basefilesAreLinkedIntoEveryTaskKeepingTheirMode() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            try sandbox.write("\(root.name)/conn-1/base/process.sh", Array("#!/bin/sh\n".utf8), mode: 0o755)
            try sandbox.write("\(root.name)/conn-1/base/models/m.bin", [1, 2, 3], mode: 0o644)
            let base = try connection.handle.directory(["base"], create: false)
            let paths = [try WorkPath("process.sh"), try WorkPath("models/m.bin")]
            let first = try TaskWorkDir.create(in: connection, sector: 0), second = try TaskWorkDir.create(in: connection, sector: 1)
            try first.linkBasefiles(paths, from: base)
            try second.linkBasefiles(paths, from: base)
            let original = try #require(sandbox.status("\(root.name)/conn-1/base/process.sh"))
            #expect(original.st_nlink == 3, "one file, three names: no copy")
            for task in [first, second] {
                let script = try #require(sandbox.status("\(root.name)/conn-1/\(task.name)/process.sh"))
                #expect(script.st_ino == original.st_ino)
                #expect(script.st_mode & 0o777 == 0o755)
                #expect(sandbox.read("\(root.name)/conn-1/\(task.name)/models/m.bin") == [1, 2, 3])
            }
            first.remove()
            #expect(sandbox.read("\(root.name)/conn-1/base/models/m.bin") == [1, 2, 3], "removing a task keeps the basefile")
        }
    }

    @Test func anInputWithABasefilesNameIsRefused() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            try sandbox.write("\(root.name)/conn-1/base/process.sh", [1], mode: 0o755)
            let base = try connection.handle.directory(["base"], create: false)
            let task = try TaskWorkDir.create(in: connection, sector: 0)
            try task.linkBasefiles([WorkPath("process.sh")], from: base)
            #expect(throws: ScanFailure(code: .badRequest, message: "process.sh is there already (a basefile has that name)")) {
                try task.createFile(at: WorkPath("process.sh"))
            }
            #expect(sandbox.read("\(root.name)/conn-1/base/process.sh") == [1])
        }
    }

    @Test func aBasefileThroughALinkInTheBaseIsRefused() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/lib/x.so", [7])
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            try sandbox.symlink("\(root.name)/conn-1/base/lib", to: sandbox.at("outside/lib"))
            let base = try connection.handle.directory(["base"], create: false)
            let task = try TaskWorkDir.create(in: connection, sector: 0)
            #expect(throws: ScanFailure(code: .badRequest, message: "lib/x.so passes through a symbolic link (lib)")) {
                try task.linkBasefiles([WorkPath("lib/x.so")], from: base)
            }
            #expect(sandbox.status("outside/lib/x.so")?.st_nlink == 1)
        }
    }

    @Test func aCopyKeepsTheBytesModeAndTime() async throws {
        try await WorkDirSandbox.with { sandbox in
            let bytes = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }  // over two buffers
            try sandbox.write("from/tool", bytes, mode: 0o750)
            var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 5), timespec(tv_sec: 1_700_000_000, tv_nsec: 5)]
            try #require(utimensat(AT_FDCWD, sandbox.at("from/tool"), &times, 0) == 0)
            try sandbox.makeDirectory("to")
            try TaskWorkDir.copy(WorkPath("tool"), from: DirectoryHandle.open(sandbox.at("from")), to: DirectoryHandle.open(sandbox.at("to")))
            #expect(sandbox.read("to/tool") == bytes)
            let stats = try #require(sandbox.status("to/tool"))
            #expect(stats.st_mode & 0o777 == 0o750)
            #expect(stats.st_mtim.tv_sec == 1_700_000_000 && stats.st_mtim.tv_nsec == 5)
            #expect(stats.st_ino != sandbox.status("from/tool")?.st_ino)
        }
    }
}
