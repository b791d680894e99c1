import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetWire
@testable import SkyNetWork

/// The fast path for `scan` and `result` lines must take exactly the lines our encoder writes
/// and read them as the general decoder does; everything else goes the long way, unchanged.
@Suite(.onOwnThread)
struct CanonicalLineTests {
    private static let texts = ["", "0", "42", "héllo wörld", "tab\there", "quote \" inside", "back\\slash",
                                "line\nbreak", String(repeating: "x", count: 5000), "emoji 🛰️", "\u{7F}del"]

    @Test func everyResultOurEncoderWritesIsReadAsTheGeneralDecoderReadsIt() throws {
        var fast = 0
        for (index, text) in Self.texts.enumerated() {
            for id in [0, 1, 7, -3, 1_000_000_007, Int.max, Int.min] {
                let reply = Reply.result(id: id, task: UUID(), result: text)
                let line = Data(reply.line.dropLast())
                let decoded = try Reply.decode(line)
                #expect(decoded == reply, "\(index) \(id)")
                if let quick = CanonicalLine.result(line) {
                    #expect(quick == reply)
                    fast += 1
                }
            }
        }
        // The 7 texts that need no escape take the fast path, with every id (Int.min and Int.max too).
        #expect(fast == 7 * 7, "\(fast) lines took the fast path")
        #expect(CanonicalLine.result(Data(Reply.result(id: 5, task: UUID(), result: "ok").line.dropLast())) != nil)
    }

    @Test func everyScanOurEncoderWritesIsReadAsTheGeneralDecoderReadsIt() throws {
        for duration in [0, 0.01, 1, 1.5, 3600, 1e-5, 0.1 + 0.2] {
            for timeout in [nil, 0.5, 30, 604_800] as [Double?] {
                for wait in [nil, 0.25, 5, 604_800] as [Double?] {
                    for input in [0, -1, 12345, Int.max] {
                        let request = Request.scan(id: 9, task: ScanTask(input: input, duration: duration, timeout: timeout), wait: wait)
                        let line = Data(request.line.dropLast())
                        #expect(try Request.decode(line) == request)
                        #expect(CanonicalLine.scan(line) == request,
                                "\(duration) \(String(describing: timeout)) \(String(describing: wait)) \(input)")
                    }
                }
            }
        }
    }

    @Test func anythingWrittenAnotherWayGoesTheLongWayAndIsStillRead() throws {
        let task = "0b7a4c1e-9d2f-4a3b-8c5d-6e7f8a9b0c1d"
        let results = [
            #"{"type":"result","id":007,"task":"\#(task)","result":"x"}"#,              // leading zeros: refused by JSON
            #"{"type":"result", "id":7,"task":"\#(task)","result":"x"}"#,              // a space
            #"{"id":7,"type":"result","task":"\#(task)","result":"x"}"#,               // another order
            #"{"type":"result","id":7,"task":"\#(task.uppercased())","result":"x"}"#,  // upper-case UUID
            #"{"type":"result","id":7,"task":"\#(task)","result":"a\u0041"}"#,         // an escape
            #"{"type":"result","id":7,"task":"\#(task)","result":"x","extra":1}"#,      // an extra field
            #"{"type":"result","id":7,"task":"\#(task)","result":"x"}  "#,            // trailing spaces
            #"{"type":"result","id":7.0,"task":"\#(task)","result":"x"}"#,             // a fraction
            #"{"type":"result","id":-0,"task":"\#(task)","result":"x"}"#,              // -0: we write 0
            #"{"type":"result","id":9223372036854775808,"task":"\#(task)","result":"x"}"#,   // Int.max + 1
            #"{"type":"result","id":-9223372036854775809,"task":"\#(task)","result":"x"}"#,  // Int.min - 1
        ]
        for text in results {
            let line = Data(text.utf8)
            #expect(CanonicalLine.result(line) == nil, "\(text)")
            let general = Result { try Reply.decode(line) }
            switch general {
            case .success(let reply): #expect(reply.requestID == (text.contains("-0") ? 0 : 7))
            case .failure(let error): #expect(error is WireError)
            }
        }
        #expect(try Reply.decode(Data(results[4].utf8)) == .result(id: 7, task: UUID(wireText: task)!, result: "aA"))
        let scans = [
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1}}"#,      // 1, not 1.0
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":-1.0}}"#,   // refused duration
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.0,"timeout":0.0}}"#,
            #"{"type":"scan","id":1,"task":{"input":3,"id":"\#(task)","duration":1.0}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.0}}x"#,
            #"{"type":"scan","id":-0,"task":{"id":"\#(task)","input":3,"duration":1.0}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":-0,"duration":1.0}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task.uppercased())","input":3,"duration":1.0}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.50}}"#,   // 1.5 written longer
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1e0}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.0,"timeout":30}}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.0},"wait":5}"#,
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.00}}"#,   // a whole number written longer
            #"{"type":"scan","id":1,"task":{"id":"\#(task)","input":3,"duration":1.0e0}}"#,
        ]
        for text in scans { #expect(CanonicalLine.scan(Data(text.utf8)) == nil, "\(text)") }
        #expect(try Request.decode(Data(scans[0].utf8)) == .scan(id: 1, task: ScanTask(id: UUID(wireText: task)!, input: 3, duration: 1)))
        #expect(throws: WireError.self) { try Request.decode(Data(scans[1].utf8)) }
        #expect(throws: WireError.self) { try Request.decode(Data(scans[2].utf8)) }
        // Each written another way reads as its canonical twin does.
        let id = UUID(wireText: task)!
        let twins: [(Int, Request)] = [
            (5, .scan(id: 0, task: ScanTask(id: id, input: 3, duration: 1))),
            (6, .scan(id: 1, task: ScanTask(id: id, input: 0, duration: 1))),
            (7, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1))),
            (8, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1.5))),
            (9, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1))),
            (10, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1, timeout: 30))),
            (11, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1), wait: 5)),
            (12, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1))),
            (13, .scan(id: 1, task: ScanTask(id: id, input: 3, duration: 1))),
        ]
        for (index, twin) in twins {
            #expect(try Request.decode(Data(scans[index].utf8)) == twin, "\(scans[index])")
            #expect(CanonicalLine.scan(Data(twin.line.dropLast())) == twin)
        }
    }

    @Test func truncatedCanonicalLinesNeverCrashAndNeverTakeTheFastPath() {
        let lines = [Reply.result(id: 12, task: UUID(), result: "abc").line.dropLast(),
                     Request.scan(id: 3, task: ScanTask(input: 4, duration: 0.5, timeout: 2)).line.dropLast()]
        for line in lines {
            for cut in 0..<line.count {
                let prefix = Data(line.prefix(cut))
                #expect(CanonicalLine.result(prefix) == nil)
                #expect(CanonicalLine.scan(prefix) == nil)
            }
        }
    }
}
