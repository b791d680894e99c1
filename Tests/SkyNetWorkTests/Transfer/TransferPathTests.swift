import Foundation
import Testing
@testable import SkyNetWork

/// The paths files travel by: what is kept, what is refused and with which words, and the
/// plan that maps a task's input and returns between here and a node.
struct TransferPathTests {
    private func refusal(_ text: String) -> String? {
        do { _ = try TransferPath(text); return nil } catch { return error.description }
    }

    @Test func anAbsoluteInputGoesUnderTheWorkDirectoryWithoutItsLeadingSlash() throws {
        let path = try TransferPath("/data/a.jpg")
        #expect(path.isAbsolute && path.components == ["data", "a.jpg"])
        #expect(path.onNode.text == "data/a.jpg" && !path.onNode.isAbsolute)
        #expect(try TransferPath("//data//a.jpg").onNode.text == "data//a.jpg")
        let relative = try TransferPath("photos/a.jpg")
        #expect(relative.onNode == relative && relative.directories == ["photos"] && relative.name == "a.jpg")
    }

    @Test(arguments: ["./a", "a//b", "...", "a b.jpg", "it's \"quoted\".txt", "é.jpg", "a/./b/", "-rf", String(repeating: "x", count: 255)])
    func ordinaryNamesAreKept(_ text: String) throws {
        let path = try TransferPath(text)
        #expect(path.text == text)
        #expect(!path.components.contains("") && !path.components.contains("."))
    }

    @Test func refusalsSayWhatIsWrong() {
        #expect(refusal("a/../b") == #""a/../b": a ".." component is refused"#)
        #expect(refusal("..") == #""..": a ".." component is refused"#)
        #expect(refusal("/x/..") == #""/x/..": a ".." component is refused"#)
        #expect(refusal("a\nb") == #""a\nb": a name with a newline cannot be sent"#)
        #expect(refusal("a\0b") == #""a\u{0}b": a name with a NUL byte cannot be sent"#)
        #expect(refusal(String(repeating: "a/", count: 2048) + "b")?.hasSuffix("is 4097 bytes long, over the 4096 a path may have") == true)
        #expect(refusal(String(repeating: "y", count: 256))?.contains("is over 255 bytes") == true)
        #expect(refusal("") == "an empty path names no file")
        #expect(refusal("/") == #""/" names a directory, not a file"#)
        #expect(refusal("./") == #""./" names a directory, not a file"#)
    }

    @Test func thePlanMapsInputsAndReturnsBetweenHereAndTheNode() throws {
        var spec = TransferSpec(transfer: true, returns: [try ReturnTemplate("{.}.png"), try ReturnTemplate("out/{#}.txt")])
        #expect(spec.isActive)
        let plan = try spec.plan(for: ScanTask(input: 3, job: "t", text: "/data/a.jpg"))
        #expect(plan.localInput?.text == "/data/a.jpg")
        #expect(plan.nodeInput == "data/a.jpg")
        #expect(plan.returns.map(\.node.text) == ["data/a.png", "out/3.txt"])
        #expect(plan.returns.map(\.local.text) == ["/data/a.png", "out/3.txt"])

        spec.transfer = false
        let text = try spec.plan(for: ScanTask(input: 4, job: "t", text: "/data/b.jpg"))
        #expect(text.localInput == nil && text.nodeInput == "/data/b.jpg")
        #expect(text.returns.map(\.node.text) == ["data/b.png", "out/4.txt"])
        #expect(text.returns.map(\.local.text) == ["/data/b.png", "out/4.txt"])
        #expect(!TransferSpec().isActive && TransferSpec(cleanup: true).isActive)
    }

    @Test func aPlanWithAPathThatCannotTravelIsRefused() throws {
        let spec = TransferSpec(transfer: true, returns: [try ReturnTemplate("{}.gz")])
        #expect(throws: TransferRefusal(#""a/../b": a ".." component is refused"#)) {
            try spec.plan(for: ScanTask(input: 0, job: "t", text: "a/../b"))
        }
        let returnsOnly = TransferSpec(returns: [try ReturnTemplate("../{}")])
        #expect(throws: TransferRefusal(#"--return ../{}: "../x": a ".." component is refused"#)) {
            try returnsOnly.plan(for: ScanTask(input: 0, job: "t", text: "x"))
        }
    }
}
