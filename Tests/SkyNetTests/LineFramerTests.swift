import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// The framer alone: bytes in, lines out, no socket.
struct LineFramerTests {
    func lines(_ outputs: [LineFramer.Output]) -> [String] {
        outputs.compactMap { if case .line(let data) = $0 { String(decoding: data, as: UTF8.self) } else { nil } }
    }

    @Test func aLineSplitAcrossChunksComesOutWhole() {
        var framer = LineFramer(maxLineBytes: 100)
        #expect(framer.feed(Array("hel".utf8)).isEmpty)
        #expect(framer.feed(Array("lo wo".utf8)).isEmpty)
        #expect(framer.pendingCount == 8)
        #expect(lines(framer.feed(Array("rld\nne".utf8))) == ["hello world"])
        #expect(lines(framer.feed(Array("xt\n".utf8))) == ["next"])
        #expect(framer.pendingCount == 0)
    }

    @Test func manyLinesInOneChunkComeOutInOrder() {
        var framer = LineFramer(maxLineBytes: 100)
        let text = (0..<500).map { "line \($0)\n" }.joined() + "\n" + "tail"
        let out = lines(framer.feed(Array(text.utf8)))
        #expect(out == (0..<500).map { "line \($0)" } + [""])
        #expect(framer.pendingCount == 4)
    }

    @Test func everySplitOfAStreamGivesTheSameLines() {
        let text = Array("alpha\nbeta\n\ngamma delta\nz\n".utf8)
        for cut in 0...text.count {
            var framer = LineFramer(maxLineBytes: 20)
            let out = lines(framer.feed(Array(text[..<cut])) + framer.feed(Array(text[cut...])))
            #expect(out == ["alpha", "beta", "", "gamma delta", "z"], "cut at \(cut)")
        }
    }

    @Test func aLineOfExactlyTheLimitPasses() {
        var framer = LineFramer(maxLineBytes: 10)
        let exact = String(repeating: "x", count: 10)
        #expect(lines(framer.feed(Array((exact + "\n").utf8))) == [exact])
        // The same in pieces, the newline last and alone.
        #expect(framer.feed(Array(exact.prefix(4).utf8)).isEmpty)
        #expect(framer.feed(Array(exact.dropFirst(4).utf8)).isEmpty)
        #expect(lines(framer.feed([10])) == [exact])
        #expect(!framer.isBroken)
    }

    @Test func aLineOneByteOverTheLimitIsTooLongAndEndsTheStream() {
        var framer = LineFramer(maxLineBytes: 10)
        let over = String(repeating: "x", count: 11)
        #expect(framer.feed(Array(("ok\n" + over + "\nafter\n").utf8)) == [.line(Data("ok".utf8)), .tooLong])
        #expect(framer.isBroken)
        #expect(framer.feed(Array("more\n".utf8)).isEmpty)
    }

    @Test func aLineWithoutNewlineIsTooLongAsSoonAsItPassesTheLimitAndIsNotKept() {
        var framer = LineFramer(maxLineBytes: 10)
        #expect(framer.feed(Array("0123456789".utf8)).isEmpty)
        #expect(framer.feed(Array("a".utf8)) == [.tooLong])
        #expect(framer.pendingCount == 0)
    }
}
