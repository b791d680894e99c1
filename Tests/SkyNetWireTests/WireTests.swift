import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetWire
@testable import SkyNetWork
import SkyNetTestSupport

@Suite(.onOwnThread)
struct WireTests {
    func decode(_ text: String) throws(WireError) -> Request { try Request.decode(Data(text.utf8)) }

    func error(of text: String) -> WireError? {
        do { _ = try decode(text); return nil } catch { return error }
    }

    @Test func requestsSurviveARoundTrip() throws {
        let task = ScanTask(input: -42, duration: 0.25)
        let requests: [Request] = [
            .hello(version: 1, name: "coordinator"),
            .hello(version: 2, name: "", noise: Array(0..<48), actors: "app-1"),
            .scan(id: 7, task: task), .cancel(id: 7), .ping(id: Int.max),
            .scan(id: 8, task: ScanTask(id: task.id, input: 3, duration: 0.5, timeout: 2.5)),
            .job(id: 9, task: ScanTask(id: task.id, input: 4, duration: 0, job: "sum", text: "a b\n'c'", timeout: 30)),
            .job(id: 10, task: ScanTask(id: task.id, input: -1, duration: 0, job: "x.y_z-1", text: "")),
            .scan(id: 11, task: ScanTask(id: task.id, input: 2, duration: 0.01), wait: 5),
            .scan(id: 12, task: ScanTask(id: task.id, input: 2, duration: 0.01, timeout: 3), wait: 0.25),
        ]
        for request in requests {
            let line = request.line
            #expect(line.last == 10)
            #expect(!line.dropLast().contains(10))
            #expect(try Request.decode(Data(line.dropLast())) == request)
        }
    }

    @Test func repliesSurviveARoundTrip() throws {
        let replies: [Reply] = [
            .welcome(version: 1, name: "beta", capacity: 4, jobs: nil),
            .welcome(version: 1, name: "beta", capacity: 4, jobs: ["scan": "built-in simulated scan", "sum": "sha256sum {}"]),
            .welcome(version: 1, name: "beta", capacity: 4, jobs: nil, idle: 2.5),
            .welcome(version: 2, name: "beta", capacity: 4, queue: 4, jobs: nil),
            .result(id: 1, task: UUID(), result: "3"),
            .failure(id: 2, task: UUID(), code: "task-failed", message: "UnreliableAPI.action(failingEvery:) failed."),
            .pong(id: 3, Pong(name: "b", running: 2, capacity: 4, completed: 120, failed: 3)),
            .error(WireError(code: "bad-request", message: "x", id: 9)),
        ]
        for reply in replies {
            #expect(try Reply.decode(Data(reply.line.dropLast())) == reply)
        }
    }

    @Test func aWelcomesQueueIsAWholeNumberNotBelowZeroAndAbsentIsNone() throws {
        let plain = try Reply.decode(Data(#"{"type":"welcome","version":2,"name":"b","capacity":4}"#.utf8))
        #expect(plain == .welcome(version: 2, name: "b", capacity: 4, queue: 0, jobs: nil))
        for bad in ["-1", #""4""#, "1.5", "true"] {
            #expect(throws: WireError.self, "\(bad)") {
                try Reply.decode(Data(#"{"type":"welcome","version":2,"name":"b","capacity":4,"queue":\#(bad)}"#.utf8))
            }
        }
    }

    /// A peer's failure or error message is cut to 1,024 characters: every re-run and gave-up
    /// line prints it (a node answering with 1,000,000-byte messages filled 598 MB of stderr).
    @Test func aPeersLongMessageIsCut() throws {
        let long = String(repeating: "m", count: 1_000_000)
        let failure = try Reply.decode(Data(#"{"type":"failure","id":1,"task":"\#(UUID())","code":"task-failed","message":"\#(long)"}"#.utf8))
        guard case .failure(_, _, _, let message) = failure else { Issue.record("\(failure)"); return }
        #expect(message == String(repeating: "m", count: 1024) + "…")
        let error = try Reply.decode(Data(#"{"type":"error","code":"bad-request","message":"\#(long)"}"#.utf8))
        guard case .error(let wire) = error else { Issue.record("\(error)"); return }
        #expect(wire.message == String(repeating: "m", count: 1024) + "…")
        let short = try Reply.decode(Data(#"{"type":"error","code":"busy","message":"full"}"#.utf8))
        #expect(short == .error(WireError(code: .busy, message: "full")))
    }

    @Test func durationDefaultsToOneSecond() throws {
        let request = try decode(#"{"type":"scan","id":1,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":3}}"#)
        guard case .scan(_, let task, _) = request else { Issue.record("not a scan"); return }
        #expect(task.duration == 1.0)
        #expect(task.input == 3)
    }

    @Test func unknownFieldsAreIgnored() throws {
        #expect(try decode(#"{"type":"ping","id":4,"extra":[1,{"a":null}]}"#) == .ping(id: 4))
    }

    @Test(arguments: [
        ("not json", "bad-request", nil),
        ("", "bad-request", nil),
        ("[1,2]", "bad-request", nil),
        (#"{"id":3}"#, "bad-request", 3),
        (#"{"type":"ping"}"#, "bad-request", nil),
        (#"{"type":"job","id":6,"job":"scan","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":1,"input":"x"}}"#, "bad-request", 6),
        (#"{"type":"job","id":6,"job":"a b","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":1,"input":"x"}}"#, "bad-request", 6),
        (#"{"type":"job","id":6,"job":"sum","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":1,"input":7}}"#, "bad-request", 6),
        (#"{"type":"job","id":6,"job":"sum","task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","sector":1,"input":"x","timeout":0}}"#, "bad-request", 6),
        (#"{"type":"scan","id":6,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"timeout":-1}}"#, "bad-request", 6),
        (#"{"type":"ping","id":"3"}"#, "bad-request", nil),
        (#"{"type":"scan","id":5,"task":{"id":"nope","input":1}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1.5}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"duration":-1}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"duration":3600.5}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"duration":"1"}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5}"#, "bad-request", 5),
        // A wait must be a number of seconds above 0 and at most a week.
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1},"wait":0}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1},"wait":-2}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1},"wait":604801}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1},"wait":"5"}"#, "bad-request", 5),
        (#"{"type":"launch","id":6}"#, "unknown-type", 6),
        (#"{"type":"ping","id":1} trailing"#, "bad-request", nil),
        // An out-of-range number in any field keeps the id readable.
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"duration":1e999}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":-1e999}}"#, "bad-request", 5),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":99999999999999999999}}"#, "bad-request", 5),
        // An id that is not written as a whole number is not an id.
        (#"{"type":"ping","id":1e2}"#, "bad-request", nil),
        (#"{"type":"ping","id":1e999}"#, "bad-request", nil),
    ] as [(String, String, Int?)])
    func badRequestsGetTheProtocolsErrorCodes(line: String, code: String, id: Int?) {
        let error = self.error(of: line)
        #expect(error?.code.rawValue == code)
        #expect(error?.id == id)
    }

    @Test(arguments: [
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1,"duration":1e999}}"#,
         #""task.duration" is out of range"#),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":99999999999999999999}}"#,
         #""task.input" is outside the range of a 64-bit integer"#),
        (#"{"type":"scan","id":5,"task":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","input":1.5}}"#,
         #""task.input" must be a whole number"#),
        (#"{"type":"ping","id":1e2}"#, #""id" must be a whole number"#),
        (#"{"type":"ping","id":"7"}"#, #""id" must be a whole number"#),
        (#"{"type":"ping","id":99999999999999999999}"#, #""id" is outside the range of a 64-bit integer"#),
        (#"{"type":"ping","id":1e999}"#, #""id" is out of range"#),
        (#"{"type":"ping"}"#, #"missing integer field "id""#),
    ])
    func badNumbersAreNamedForWhatTheyAre(line: String, message: String) {
        let text = error(of: line)?.message ?? ""
        #expect(text.hasPrefix(message), "\(text)")
    }

    /// A type just under the line limit is quoted back cut short: the error's line stays
    /// within the 1 MiB that a coordinator reads.
    @Test func anUnknownTypeIsQuotedBackCutShort() throws {
        let type = String(repeating: "x", count: (1 << 20) - 64)
        let error = try #require(self.error(of: #"{"type":"\#(type)","id":1}"#))
        #expect(error.code.rawValue == "unknown-type")
        #expect(error.line.count <= 2 * Reply.maxMessageCharacters)
        #expect(error.message?.hasPrefix("unknown type \"xxx") == true)
    }

    @Test func anUnknownFieldOutOfRangeIsIgnoredLikeAnyUnknownField() throws {
        #expect(try decode(#"{"type":"ping","id":4,"extra":1e999}"#) == .ping(id: 4))
    }

    @Test func invalidUTF8IsABadRequest() {
        var bytes = Array(#"{"type":"ping","id":1,"x":""#.utf8)
        bytes += [0xC3, 0x28]
        bytes += Array(#""}"#.utf8)
        // Decoded leniently (U+FFFD), the line would be a valid ping: it must be refused.
        do {
            let request = try Request.decode(Data(bytes))
            Issue.record("decoded \(request)")
        } catch {
            #expect(error.code == "bad-request")
            #expect(error.message?.contains("invalid UTF-8") == true)
        }
    }

    @Test func deepNestingIsRefusedWithoutRecursingFurther() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        do {
            _ = try JSONParser.parse(Array(deep.utf8))
            Issue.record("parsed 100,000 levels")
        } catch {
            // Stopped at the first bracket past the limit, not after walking the rest.
            #expect(error.offset == JSONParser.maxDepth)
        }
        let allowed = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(try JSONParser.parse(Array(allowed.utf8)) != .null)
    }

    @Test func parserReadsEscapesAndNumbers() throws {
        let value = try JSONParser.parse(Array(#"{"s":"a\"b\\c\u00e9\ud83d\ude00\n","i":-12,"d":1.5e3,"t":true,"n":null,"big":-1e999}"#.utf8))
        #expect(value == .object([
            "s": .string("a\"b\\cé😀\n"), "i": .int(-12), "d": .double(1500), "t": .bool(true), "n": .null,
            "big": .outOfRange("-1e999"),
        ]))
    }

    @Test func aHelloNameIsShortPrintableText() throws {
        #expect(try decode(#"{"type":"hello","version":1,"name":"coordinator-7"}"#) == .hello(version: 1, name: "coordinator-7"))
        // A handshake message's bounds are counted in bytes, not in base64 characters.
        for (count, fits) in [(47, false), (48, true), (262_144, true), (262_145, false), (262_146, false)] {
            let noise = Data(repeating: 7, count: count).base64EncodedString()
            let hello = #"{"type":"hello","version":2,"noise":"\#(noise)"}"#
            #expect((error(of: hello) == nil) == fits, "\(count) bytes")
        }
        for name in [String(repeating: "x", count: 129), #"a\nb"#, #"a\u001b[2Jb"#, #"c1\u009b31mX"#, #"bidi\u202eevil"#, #"\ufeffbom"#] {
            #expect(throws: WireError.badRequest("hello \"name\" must be at most 128 bytes of printable text")) {
                try decode(#"{"type":"hello","version":1,"name":"\#(name)"}"#)
            }
        }
    }
}

@Suite(.onOwnThread)
struct DecoderFuzzTests {
    /// Twenty thousand seeded random and mutated lines through both decoders: each decodes or
    /// is refused with a protocol error; nothing traps.
    @Test func randomAndMutatedLinesDecodeOrAreRefused() {
        let seed = FuzzSeed(42)
        var seeded = seed.random
        let seeds = [
            Request.ping(id: 1).line, Request.scan(id: 2, task: ScanTask(input: 3)).line,
            Reply.pong(id: 3, Pong(name: "b", running: 1, capacity: 4, completed: 2, failed: 0)).line,
            Reply.failure(id: 4, task: UUID(), code: "busy", message: "b").line,
        ].map { Array($0.dropLast()) }
        var decoded = 0, refused = 0
        for _ in 0..<20_000 {
            var bytes = seeds[Int(seeded.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + seeded.next() % 4) where !bytes.isEmpty {
                let at = Int(seeded.next() % UInt64(bytes.count))
                switch seeded.next() % 3 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: seeded.next())
                case 1: bytes.removeSubrange(at..<min(bytes.count, at + 3))
                default: bytes.insert(contentsOf: Array("{[\"\\".utf8).shuffled(using: &seeded), at: at)
                }
            }
            let line = Data(bytes)
            // A line decodes to a message that survives its own round trip, or is refused with
            // one of the protocol's codes and a reason.
            do {
                let request = try Request.decode(line)
                #expect(try Request.decode(Data(request.line.dropLast())) == request, "\(seed)")
                decoded += 1
            } catch {
                #expect(["bad-request", "unknown-type"].contains(error.code) && error.message?.isEmpty == false, "\(seed): \(error)")
                refused += 1
            }
            do {
                let reply = try Reply.decode(line)
                #expect(try Reply.decode(Data(reply.line.dropLast())) == reply, "\(seed)")
                decoded += 1
            } catch {
                #expect(["bad-request", "unknown-type"].contains(error.code) && error.message?.isEmpty == false, "\(seed): \(error)")
                refused += 1
            }
        }
        // Mutations keep some lines valid and break others: both paths were walked.
        #expect(decoded > 100, "\(seed)")
        #expect(refused > 100, "\(seed)")
    }
}


struct UUIDWireTextTests {
    @Test func matchesFoundationsTextAndParsesBothCases() {
        for _ in 0..<1000 {
            let id = UUID()
            var text: [UInt8] = []
            id.appendWireText(to: &text)
            #expect(text == Array(id.uuidString.lowercased().utf8))
            #expect(UUID(wireText: id.uuidString.lowercased()) == id)
            #expect(UUID(wireText: id.uuidString) == id)
        }
    }

    @Test(arguments: ["", "6ba7b810-9dad-11d1-80b4-00c04fd430c", "6ba7b810-9dad-11d1-80b4-00c04fd430c8a",
                      "6ba7b810x9dad-11d1-80b4-00c04fd430c8", "6ba7b810-9dad-11d1-80b4-00c04fd430cg", "é"])
    func refusesWhatIsNotAUUID(text: String) {
        #expect(UUID(wireText: text) == nil)
    }

}
