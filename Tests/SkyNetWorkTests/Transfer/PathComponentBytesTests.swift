import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetTransfer
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A path's components are what lies between its `/` bytes. Swift's `Character` joins a `/`
/// with a combining mark after it (`/\u{301}` is one character), so splitting on characters
/// hid the `..` of `../\u{301}x`: every check of a path splits its UTF-8 bytes instead, and
/// refuses such a name at once with the clear `..` message.
@Suite struct PathComponentBytesTests {
    /// `..`, then `/` with a combining acute accent (U+0301) after it.
    static let hidden = ["../\u{301}x", "a/../\u{301}b", "/../\u{301}etc"]

    @Test(arguments: hidden)
    func aTransferPathRefusesTheHiddenDotDot(_ text: String) {
        #expect(throws: TransferRefusal("\"\(text)\": a \"..\" component is refused")) { try TransferPath(text) }
    }

    @Test(arguments: hidden)
    func aNodeRefusesTheHiddenDotDot(_ text: String) {
        do {
            _ = try WorkPath(text)
            Issue.record("\(text) was taken")
        } catch {
            #expect(error == ScanFailure(code: .badRequest, message: "\"\(text)\": a \"..\" component is refused"))
        }
    }

    @Test func theWireRefusesTheHiddenDotDotNamingTheField() {
        let line = #"{"type":"transfer","id":7,"job":"t","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":3,"input":"x","timeout":30},"returns":["../\#u{301}x"]}"#
        do {
            _ = try Request.decode(Data(line.utf8))
            Issue.record("the wire took ../\u{301}x")
        } catch {
            #expect(error.message == "returns[0] \"../\u{301}x\": a \"..\" component is refused")
        }
    }

    @Test func componentsAreSplitOnSlashBytes() throws {
        let path = try TransferPath("a/\u{301}b/c")
        #expect(path.components == ["a", "\u{301}b", "c"])
        #expect(path.directories == ["a", "\u{301}b"] && path.name == "c")
        let absolute = try TransferPath("/\u{301}x")
        #expect(absolute.isAbsolute && absolute.components == ["\u{301}x"])
        #expect(absolute.onNode.text == "\u{301}x" && !absolute.onNode.isAbsolute)
        let work = try WorkPath("a/\u{301}b")
        #expect(work.directories == ["a"] && work.name == "\u{301}b")
        #expect(try TransferPath("/\u{301}").components == ["\u{301}"])
        #expect(try TransferPath("./\u{301}").components == ["\u{301}"])
    }
}
