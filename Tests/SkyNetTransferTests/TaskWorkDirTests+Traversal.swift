import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetWork
import Testing

/// Paths a hostile coordinator might send: refused with a clear message, and nothing written
/// outside the work directory (the sandbox's tree is listed before and after).
@Suite(.timeLimit(.minutes(1)))
struct TaskWorkDirTraversalTests {
    private func refusal(_ path: String) -> String? {
        do {
            _ = try WorkPath(path)
            return nil
        } catch {
            #expect(error.code == .badRequest)
            return error.message
        }
    }

    @Test func namesThatLeaveTheDirectoryOrCannotBeNamedAreRefused() {
        #expect(refusal("../x") == #""../x": a ".." component is refused"#)
        #expect(refusal("a/../../etc/passwd") == #""a/../../etc/passwd": a ".." component is refused"#)
        #expect(refusal("..") == #""..": a ".." component is refused"#)
        #expect(refusal("/../x") == #""/../x": a ".." component is refused"#)
        #expect(refusal("a\0/../b") == #""a\x00/../b": a NUL byte is refused"#)
        #expect(refusal("a\nb") == #""a\x0ab": a name with a newline is refused"#)
        #expect(refusal(String(repeating: "a", count: 4097))?.hasSuffix(": longer than 4096 bytes") == true)
        #expect(refusal("d/" + String(repeating: "b", count: 256))?.hasSuffix("is longer than 255 bytes") == true)
        for nothing in ["", "/", ".", "./", "//./"] {
            #expect(refusal(nothing) == "\"\(nothing)\": names no file")
        }
    }

    @Test func oddButHarmlessNamesAreKept() throws {
        #expect(try WorkPath("./a").directories == [] && WorkPath("./a").name == "a")
        #expect(try WorkPath("a//b").directories == ["a"] && WorkPath("a//b").name == "b")
        #expect(try WorkPath("/data/a.jpg").directories == ["data"])
        #expect(try WorkPath("...").name == "...")
        #expect(try WorkPath("..a/b..").directories == ["..a"])
        #expect(try WorkPath("with space/\"quo'te\"/é.jpg").name == "é.jpg")
        #expect(try WorkPath(String(repeating: "c", count: 255)).name.utf8.count == 255)
    }

    @Test func aLinkPlantedOnThePathIsRefusedAndNothingIsWrittenOutside() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/keep.txt", [1])
            try TaskWorkDirTests.withTaskDir(sandbox) { task, relative in
                try sandbox.symlink("\(relative)/photos", to: sandbox.at("outside"))
                try sandbox.symlink("\(relative)/a/b", to: "../../../../outside")
                try sandbox.symlink("\(relative)/up", to: "..")
                let before = sandbox.tree("outside")
                let cases = [
                    ("photos/a.jpg", "photos/a.jpg passes through a symbolic link (photos)"),
                    ("a/b/c/d.jpg", "a/b/c/d.jpg passes through a symbolic link (a/b)"),
                    ("up/conn-1/x", "up/conn-1/x passes through a symbolic link (up)"),
                ]
                for (path, message) in cases {
                    #expect(throws: ScanFailure(code: .badRequest, message: message)) { try task.createFile(at: WorkPath(path)) }
                }
                #expect(sandbox.tree("outside") == before)
                #expect(!sandbox.exists("\(relative)/a/b/c"))
            }
        }
    }

    @Test func aFileOnThePathIsNoDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            try TaskWorkDirTests.withTaskDir(sandbox) { task, relative in
                try sandbox.write("\(relative)/plain", [1])
                #expect(throws: ScanFailure(code: .badRequest, message: "plain/x passes through plain, which is not a directory")) {
                    try task.createFile(at: WorkPath("plain/x"))
                }
                #expect(sandbox.read("\(relative)/plain") == [1])
            }
        }
    }

    @Test func noAttemptWritesAnythingOutsideTheWorkDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/keep.txt", [1])
            try sandbox.write("etc/passwd", [2])
            let hostile = ["../x", "../../outside/y", "/../etc/passwd", "a/../../../etc/passwd", "photos/a.jpg", "up/escape",
                           sandbox.at("etc/passwd"), "../" + sandbox.at("outside/z")]
            try TaskWorkDirTests.withTaskDir(sandbox) { task, relative in
                try sandbox.symlink("\(relative)/photos", to: sandbox.at("outside"))
                try sandbox.symlink("\(relative)/up", to: "..")
                let outsideBefore = sandbox.tree().filter { !$0.key.hasPrefix("skynet-node-") }
                var written: [String] = []
                for path in hostile {
                    guard let file = try? task.createFile(at: WorkPath(path)) else { continue }
                    try TaskWorkDirTests.fill(file, [6, 6, 6])
                    written.append(path)
                }
                #expect(written == [sandbox.at("etc/passwd")], "only the absolute path is written, under the work directory")
                #expect(sandbox.read("\(relative)\(sandbox.at("etc/passwd"))") == [6, 6, 6])
                #expect(sandbox.tree().filter { !$0.key.hasPrefix("skynet-node-") } == outsideBefore)
                #expect(sandbox.read("etc/passwd") == [2])
            }
        }
    }
}
