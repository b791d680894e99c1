import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// A task's work directory: files go where their relative path says, basefiles are linked in,
/// returns are read only when the job made them as regular files, and removal takes the
/// directory and nothing it points to.
@Suite(.timeLimit(.minutes(1)))
struct TaskWorkDirTests {
    /// A root, a connection and a task directory in `sandbox`, removed after `body`.
    static func withTaskDir<T>(_ sandbox: WorkDirSandbox, sector: Int = 3,
                               _ body: (TaskWorkDir, _ relative: String) throws -> T) throws -> T {
        let root = try WorkRoot.make(in: sandbox.path)
        defer { root.remove() }
        let task = try TaskWorkDir.create(in: root.openConnection(), sector: sector)
        return try body(task, "\(root.name)/conn-1/\(task.name)")
    }

    /// Writes `bytes` through `file` at offset 0, then closes it.
    static func fill(_ file: OpenFile, _ bytes: [UInt8], mode: Int = 0o600) throws {
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        try file.finish(mode: mode, mtimeNanoseconds: 1_732_441_234_123_456_789)
        file.close()
    }

    /// All the bytes of `file` from offset 0, then closes it.
    static func contents(_ file: OpenFile) throws -> [UInt8] {
        defer { file.close() }
        var bytes: [UInt8] = [], offset: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        while case let count = try file.read(into: buffer, at: offset), count > 0 {
            bytes += buffer[..<count]
            offset += Int64(count)
        }
        return bytes
    }

    @Test func aTasksDirectoryIsNamedForItsSectorAndCountsPerConnection() async throws {
        try await WorkDirSandbox.with { sandbox in
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            let first = try TaskWorkDir.create(in: connection, sector: 5), again = try TaskWorkDir.create(in: connection, sector: 5)
            #expect([first.name, again.name] == ["task-5-1", "task-5-2"], "a sector run again gets a directory of its own")
            #expect(first.path == root.path + "/conn-1/task-5-1")
            #expect(sandbox.status("\(root.name)/conn-1/task-5-2").map { $0.st_mode & 0o777 } == 0o700)
        }
    }

    @Test func anInputKeepsItsRelativePathInsideTheDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            try Self.withTaskDir(sandbox) { task, relative in
                let bytes: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 37) }
                try Self.fill(task.createFile(at: WorkPath("photos/2024/a b'\"é.jpg")), bytes, mode: 0o644)
                #expect(sandbox.read("\(relative)/photos/2024/a b'\"é.jpg") == bytes)
                let stats = try #require(sandbox.status("\(relative)/photos/2024/a b'\"é.jpg"))
                #expect(stats.st_mode & 0o777 == 0o644)
                #expect(stats.st_mtim.tv_sec == 1_732_441_234 && stats.st_mtim.tv_nsec == 123_456_789)
            }
        }
    }

    @Test func anAbsoluteInputLandsUnderTheDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            // The absolute path names a place in the sandbox: it must stay untouched.
            try sandbox.makeDirectory("data")
            let absolute = sandbox.at("data/a.jpg")
            try Self.withTaskDir(sandbox) { task, relative in
                try Self.fill(task.createFile(at: WorkPath(absolute)), [1, 2, 3])
                #expect(sandbox.read("\(relative)\(absolute)") == [1, 2, 3])
            }
            #expect(!sandbox.exists("data/a.jpg"))
        }
    }

    @Test func aFileAlreadyThereIsNeverOpenedOrReplaced() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/target.txt", [9, 9])
            try Self.withTaskDir(sandbox) { task, relative in
                try sandbox.symlink("\(relative)/out.txt", to: sandbox.at("outside/target.txt"))
                #expect {
                    try task.createFile(at: WorkPath("out.txt"))
                } throws: { ($0 as? ScanFailure)?.code == .badRequest }
            }
            #expect(sandbox.read("outside/target.txt") == [9, 9])
        }
    }

    @Test func aReturnIsReadWhenTheJobMadeARegularFile() async throws {
        try await WorkDirSandbox.with { sandbox in
            try Self.withTaskDir(sandbox) { task, relative in
                try sandbox.write("\(relative)/photos/a.png", [4, 5, 6])
                #expect(try Self.contents(task.openReturn(WorkPath("photos/a.png"))) == [4, 5, 6])
                #expect(try Self.contents(task.openReturn(WorkPath("./photos//a.png"))) == [4, 5, 6])
            }
        }
    }

    @Test func aMissingReturnFailsTheTaskByName() async throws {
        try await WorkDirSandbox.with { sandbox in
            try Self.withTaskDir(sandbox) { task, _ in
                for path in ["photos/a.png", "a.png"] {
                    #expect(throws: ScanFailure(code: .missingReturn, message: "did not produce \(path)")) {
                        try task.openReturn(WorkPath(path))
                    }
                }
            }
        }
    }

    @Test func aReturnThatIsALinkOrNotAFileIsNotReturned() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/secret", [1])
            try Self.withTaskDir(sandbox) { task, relative in
                // What `ln -s /etc/passwd out` in the job would leave, a FIFO, a directory.
                try sandbox.symlink("\(relative)/out", to: sandbox.at("outside/secret"))
                try #require(mkfifo(sandbox.at("\(relative)/fifo"), 0o600) == 0)
                try sandbox.makeDirectory("\(relative)/dir")
                try sandbox.symlink("\(relative)/linked", to: sandbox.at("outside"))
                let cases = [
                    ("out", "out is a symbolic link: not returned"),
                    ("fifo", "fifo is not a regular file: not returned"),
                    ("dir", "dir is not a regular file: not returned"),
                    ("linked/secret", "linked/secret passes through a symbolic link (linked): not returned"),
                ]
                for (path, message) in cases {
                    #expect(throws: ScanFailure(code: .missingReturn, message: message)) { try task.openReturn(WorkPath(path)) }
                }
            }
        }
    }

    @Test func removingTheDirectoryLeavesWhatItsLinksPointTo() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/precious.txt", [42])
            let root = try WorkRoot.make(in: sandbox.path)
            defer { root.remove() }
            let connection = try root.openConnection()
            let task = try TaskWorkDir.create(in: connection, sector: 0), sibling = try TaskWorkDir.create(in: connection, sector: 1)
            try Self.fill(task.createFile(at: WorkPath("deep/er/a.bin")), [1])
            try Self.fill(sibling.createFile(at: WorkPath("b.bin")), [2])
            try sandbox.symlink("\(root.name)/conn-1/\(task.name)/deep/all", to: sandbox.at("outside"))
            try sandbox.symlink("\(root.name)/conn-1/\(task.name)/file", to: sandbox.at("outside/precious.txt"))
            let before = sandbox.tree("outside")
            task.remove()
            #expect(!sandbox.exists("\(root.name)/conn-1/\(task.name)"))
            #expect(sandbox.read("\(root.name)/conn-1/\(sibling.name)/b.bin") == [2])
            #expect(sandbox.tree("outside") == before)
        }
    }
}
