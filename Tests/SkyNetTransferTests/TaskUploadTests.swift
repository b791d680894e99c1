import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// What a node readies before a transfer's first byte: refusals in the design's order, each
/// leaving nothing behind (no place, no reservation, no directory), and on success the task's
/// directory with its basefiles and an empty input file.
@Suite(.timeLimit(.minutes(1)))
struct TaskUploadTests {
    static let mebibyte: Int64 = 1 << 20

    /// A root with one connection whose `base/` holds `process.sh` (mode 0755), in `sandbox`.
    struct Setup {
        let files: NodeFiles
        let connection: ConnectionDirectory
        let base: DirectoryHandle
        let relative: String

        func prepare(_ request: TaskUpload.Request, running: Int = 0, capacity: Int = 4, maxFileSize: Int64 = 1 << 30,
                     basefiles: [String] = ["process.sh"]) throws(ScanFailure) -> TaskUpload {
            var paths: [WorkPath] = []
            for path in basefiles { paths.append(try WorkPath(path)) }
            return try TaskUpload.prepare(request, node: "node-x", files: files, maxFileSize: maxFileSize, running: running,
                                          capacity: capacity, connection: connection, basefiles: paths, base: base)
        }

        /// The names in the connection's directory other than `base`.
        func taskDirectories(_ sandbox: WorkDirSandbox) -> [String] {
            sandbox.tree(relative).keys.filter { !$0.contains("/") && $0 != "base" }.sorted()
        }
    }

    private func withSetup(free: Int64 = 1 << 40, _ body: (WorkDirSandbox, Setup) throws -> Void) async throws {
        try await WorkDirSandbox.with { sandbox in
            let files = NodeFiles(node: "node-x", parent: sandbox.path) { _ in free }
            defer { files.remove() }
            let root = try files.root()
            let connection = try root.openConnection()
            try sandbox.write("\(root.name)/conn-1/base/process.sh", Array("#!/bin/sh\n".utf8), mode: 0o755)
            let base = try connection.handle.directory(["base"], create: false)
            try body(sandbox, Setup(files: files, connection: connection, base: base, relative: "\(root.name)/conn-1"))
        }
    }

    private func request(input: String = "photos/a.jpg", size: Int64? = 10, returns: [String] = ["photos/a.jpg.out"]) -> TaskUpload.Request {
        TaskUpload.Request(sector: 3, input: input, fileSize: size, returns: returns)
    }

    @Test func anUploadGetsItsDirectoryBasefilesAndAnEmptyInput() async throws {
        try await withSetup { sandbox, setup in
            let upload = try setup.prepare(request())
            let task = "\(setup.relative)/\(upload.workDir.name)"
            #expect(upload.workDir.name == "task-3-1")
            #expect(sandbox.read("\(task)/photos/a.jpg") == [])
            #expect(sandbox.status("\(task)/process.sh")?.st_ino == sandbox.status("\(setup.relative)/base/process.sh")?.st_ino)
            #expect(upload.input?.path.text == "photos/a.jpg")
            #expect(upload.returns.map(\.text) == ["photos/a.jpg.out"])
            #expect(setup.files.uploads == 1)
            #expect(setup.files.space.reservedBytes == 10)
            upload.started()
            upload.started()
            #expect(setup.files.uploads == 0, "running, the task holds a slot of the system instead")
            upload.discard()
            #expect(!sandbox.exists(task))
            #expect(setup.files.space.reservedBytes == 0)
            #expect(setup.files.uploads == 0)
        }
    }

    @Test func withoutAFileTheInputIsTextAndNoFileIsMade() async throws {
        try await withSetup { sandbox, setup in
            let upload = try setup.prepare(request(input: "../not a path", size: nil, returns: []))
            #expect(upload.input == nil)
            #expect(sandbox.tree("\(setup.relative)/\(upload.workDir.name)").keys.sorted() == ["process.sh"])
            #expect(setup.files.space.reservedBytes == 0)
            upload.discard()
        }
    }

    @Test func aFullNodeAnswersBusyBeforeAnything() async throws {
        try await withSetup { sandbox, setup in
            let held = try setup.prepare(request())
            #expect(throws: ScanFailure.busy("node-x", capacity: 2)) { try setup.prepare(request(), running: 1, capacity: 2) }
            #expect(setup.taskDirectories(sandbox) == [held.workDir.name])
            #expect(setup.files.space.reservedBytes == 10)
            held.discard()
        }
    }

    @Test func aRefusedPathComesFirstAndNamesItsField() async throws {
        try await withSetup { sandbox, setup in
            let cases: [(TaskUpload.Request, String)] = [
                (request(returns: ["ok", "../x"]), #"returns[1] "../x": a ".." component is refused"#),
                (request(input: "a/../../b"), #"task.input "a/../../b": a ".." component is refused"#),
                (request(input: "process.sh"), #"task.input "process.sh": a basefile has that name"#),
                (request(returns: ["./process.sh"]), #"returns[0] "./process.sh": a basefile has that name"#),
                (request(input: "a\nb"), #"task.input "a\x0ab": a name with a newline is refused"#),
            ]
            for (request, message) in cases {
                // Even on a full node: a bad request is said as such, not as busy.
                #expect(throws: ScanFailure(code: .badRequest, message: message)) { try setup.prepare(request, running: 4, capacity: 4) }
            }
            #expect(setup.taskDirectories(sandbox).isEmpty)
            #expect(setup.files.uploads == 0)
        }
    }

    @Test func aFileOverTheLimitIsRefusedWithItsSize() async throws {
        try await withSetup { sandbox, setup in
            #expect(throws: ScanFailure(code: .fileTooLarge, message: "photos/a.jpg is 2.0 GiB, over node-x's --max-file-size 1 GiB")) {
                try setup.prepare(request(size: (2 << 30) + 12345))
            }
            #expect(throws: ScanFailure(code: .fileTooLarge, message: "photos/a.jpg is 1.5 KiB, over node-x's --max-file-size 1 KiB")) {
                try setup.prepare(request(size: 1536), maxFileSize: 1024)
            }
            _ = try setup.prepare(request(size: 1024), maxFileSize: 1024).discard()
            #expect(setup.taskDirectories(sandbox).isEmpty)
            #expect(setup.files.uploads == 0)
        }
    }

    @Test func aNodeWithoutRoomSaysHowMuchItHas() async throws {
        try await withSetup(free: 12 * Self.mebibyte + 999) { sandbox, setup in
            #expect(throws: ScanFailure(code: .noSpace, message: "no space on node-x: 12 MiB free, 40 MiB needed")) {
                try setup.prepare(request(size: 40 * Self.mebibyte))
            }
            let first = try setup.prepare(request(size: 8 * Self.mebibyte))
            #expect(throws: ScanFailure(code: .noSpace, message: "no space on node-x: 4 MiB free, 5 MiB needed")) {
                try setup.prepare(request(size: 5 * Self.mebibyte))
            }
            #expect(setup.taskDirectories(sandbox) == [first.workDir.name])
            #expect(setup.files.uploads == 1)
            first.discard()
        }
    }

    @Test func aFailureAfterTheDirectoryWasMadeUndoesEverything() async throws {
        try await withSetup { sandbox, setup in
            // A basefile the connection never stored: its link fails once the directory exists.
            #expect {
                try setup.prepare(request(), basefiles: ["process.sh", "gone.sh"])
            } throws: { ($0 as? ScanFailure)?.message == "cannot write gone.sh: No such file or directory" }
            #expect(setup.taskDirectories(sandbox).isEmpty)
            #expect(setup.files.space.reservedBytes == 0)
            #expect(setup.files.uploads == 0)
        }
    }

    @Test func sizesReadAsPeopleWriteThem() {
        #expect(ByteCount.approximate(12) == "12 bytes")
        #expect(ByteCount.approximate(1536) == "1.5 KiB")
        #expect(ByteCount.approximate(1 << 30) == "1 GiB")
        #expect(ByteCount.approximate((2 << 30) + 1) == "2.0 GiB")
        #expect(ByteCount.approximate((1 << 30) - 1) == "1024.0 MiB")
        #expect(ByteCount.approximate(Int64.max) == "8388608.0 TiB")
    }
}
