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

    /// Every line of `chunks` fed in turn and then finished, as text, `nil` for an over-long report.
    func framed(_ framer: inout LineFramer, _ chunks: [String]) -> [String?] {
        var out: [String?] = []
        let take = { (piece: LineFramer.Piece) in
            if case .line(let bytes) = piece { out.append(String(decoding: bytes, as: UTF8.self)) } else { out.append(nil) }
        }
        for chunk in chunks { Array(chunk.utf8).withUnsafeBytes { framer.split($0, take) } }
        framer.finish(take)
        return out
    }

    @Test func skipReportsEachOverLongLineOnceAtItsEndAndGoesOn() {
        var framer = LineFramer(maxLineBytes: 5, overLong: .skip)
        #expect(framed(&framer, ["ok\n1234567\nfine\n", "abc", "defgh", "ij\nlast"]) == ["ok", nil, "fine", nil, "last"])
    }

    @Test func skipHoldsNothingOfAnOverLongLineAndReportsOneUnfinishedAtTheEnd() {
        var framer = LineFramer(maxLineBytes: 5, overLong: .skip)
        #expect(framer.feed(Array("123456789".utf8)).isEmpty)
        #expect(framer.pendingCount == 0)
        #expect(framer.feed(Array("0123".utf8)).isEmpty)
        #expect(framed(&framer, []) == [nil])
        #expect(!framer.isBroken)
    }

    @Test func truncateHandsOutTheFirstBytesOfAnOverLongLineAtItsEnd() {
        var framer = LineFramer(maxLineBytes: 5, overLong: .truncate)
        #expect(framed(&framer, ["ab\n1234567\n", "xy", "zzzzzz", "zz\nq\n", "0123456789"]) == ["ab", "12345", "xyzzz", "q", "01234"])
        #expect(framer.pendingCount == 0)
    }

    @Test func truncateHoldsAtMostTheLimit() {
        var framer = LineFramer(maxLineBytes: 5, overLong: .truncate)
        #expect(framer.feed(Array("123".utf8)).isEmpty)
        #expect(framer.feed(Array("456789".utf8)).isEmpty)
        #expect(framer.pendingCount == 5)
        #expect(lines(framer.feed([10])) == ["12345"])
    }

    @Test func finishHandsOutALastLineWithoutNewlineButNotAnEmptyOne() {
        var framer = LineFramer(maxLineBytes: 10)
        #expect(framed(&framer, ["a\nb"]) == ["a", "b"])
        #expect(framed(&framer, ["c\n"]) == ["c"])
    }

    @Test func afterFailFinishHandsOutNothing() {
        var framer = LineFramer(maxLineBytes: 3, overLong: .fail)
        #expect(framed(&framer, ["ab\nabcd", "ef\n", "x"]) == ["ab", nil])
    }

    @Test func splitStopsWhenToldAndGoesOnFromWhereItStopped() {
        var framer = LineFramer(maxLineBytes: 10)
        let chunk = Array("one\ntwo\nthr".utf8)
        var start = 0
        var seen: [String] = []
        chunk.withUnsafeBytes { raw in
            framer.split(raw, from: &start) { piece in
                if case .line(let bytes) = piece { seen.append(String(decoding: bytes, as: UTF8.self)) }
                return false
            }
            #expect(seen == ["one"] && start == 4)
            framer.split(raw, from: &start) { _ in true }
            #expect(start == chunk.count && framer.pendingCount == 3)
        }
        #expect(lines(framer.feed(Array("ee\n".utf8))) == ["three"])
    }
}
