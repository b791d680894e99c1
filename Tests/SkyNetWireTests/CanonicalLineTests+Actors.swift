import Foundation
import Testing
@testable import SkyNetWire
import SkyNetTestSupport

/// The fast path for an actor's `call` and `returned` lines: it takes exactly what our encoder
/// writes, reads it as the general decoder does, and leaves everything else to it.
extension CanonicalLineTests {
    static func generalCall(_ line: Data) -> Request? {
        guard let fields = try? WireFields(line), (try? fields.type()) == "call",
              let id = try? fields.requestID(), let call = try? fields.actorCall() else { return nil }
        return .call(id: id, call)
    }

    static func generalReturned(_ line: Data) -> Reply? {
        guard let fields = try? WireFields(line), (try? fields.type()) == "returned", let id = try? fields.requestID() else { return nil }
        return .returned(id: id, value: fields.fields["value"])
    }

    static let values: [SkyNetWire.JSONValue] = [
        .null, .bool(true), .int(0), .int(Int.min), .double(1.5), .string(""), .string("quote \" and \\ and\nline"),
        .array([]), .object([:]), .object(["b": .int(1), "a": .array([.string("x"), .null])]),
        .string(String(repeating: "é", count: 3000)),
    ]

    @Test func everyCallOurEncoderWritesIsReadAsTheGeneralDecoderReadsIt() throws {
        let target = "$s11SkyNetBench0C4EchoC4noopyS2iYaKFTE"
        var fast = 0
        for system in ["node1", "caller-3f2a9b01c4d5e6f7", "日本"] {
            for arguments in [[], Self.values, [.int(7)], Array(repeating: SkyNetWire.JSONValue.int(1), count: ActorCall.maxArguments)] {
                for generics in [[], [ActorCall.selfType]] {
                    let request = Request.call(id: 41, ActorCall(system: system, number: 3, target: target, generics: generics, arguments: arguments))
                    let line = Data(request.line.dropLast())
                    #expect(try Request.decode(line) == request)
                    #expect(Self.generalCall(line) == request)
                    if let quick = CanonicalLine.call(line) {
                        #expect(quick == request)
                        #expect(generics.isEmpty, "a call with type arguments goes the long way")
                        fast += 1
                    }
                }
            }
        }
        #expect(fast == 3 * 4, "\(fast) lines took the fast path")
    }

    @Test func everyReturnedOurEncoderWritesIsReadAsTheGeneralDecoderReadsIt() throws {
        for value in [SkyNetWire.JSONValue?.none] + Self.values.map(Optional.some) {
            for id in [0, 9, Int.max, -2] {
                let reply = Reply.returned(id: id, value: value)
                let line = Data(reply.line.dropLast())
                #expect(try Reply.decode(line) == reply)
                #expect(CanonicalLine.returned(line) == reply, "\(String(describing: value))")
            }
        }
    }

    @Test func callsTheGeneralDecoderRefusesAreNotTakenByTheFastPath() throws {
        let lines = [
            #"{"type":"call","id":1,"actor":{"system":"n","number":0},"target":"T","arguments":[]}"#,   // number 0
            #"{"type":"call","id":1,"actor":{"system":"","number":1},"target":"T","arguments":[]}"#,    // no system
            #"{"type":"call","id":1,"actor":{"system":"n","number":1},"target":"","arguments":[]}"#,    // no target
            #"{"type":"call","id":1,"actor":{"system":"n","number":1},"target":"T","arguments":{}}"#,   // not an array
            #"{"type":"call","id":1,"actor":{"system":"n","number":1},"target":"T","arguments":["#
                + Array(repeating: "1", count: ActorCall.maxArguments + 1).joined(separator: ",") + "]}",
            #"{"type":"call","id":1,"actor":{"system":"n","number":1},"target":"\#(String(repeating: "x", count: ActorCall.maxTargetBytes + 1))","arguments":[]}"#,
        ]
        for text in lines {
            let line = Data(text.utf8)
            #expect(CanonicalLine.call(line) == nil, "\(text.prefix(120))")
            #expect(throws: WireError.self) { try Request.decode(line) }
        }
        // Arguments nested about as deep as a line may nest: the fast path takes exactly what
        // the general decoder takes.
        for depth in 28...34 {
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let line = Data(#"{"type":"call","id":1,"actor":{"system":"n","number":1},"target":"T","arguments":\#(nested)}"#.utf8)
            let general = Self.generalCall(line)
            #expect(CanonicalLine.call(line) == general, "\(depth)")
            #expect((general == nil) == (depth > 31), "\(depth)")
            let returned = Data(#"{"type":"returned","id":1,"value":\#(nested)}"#.utf8)
            #expect(CanonicalLine.returned(returned) == Self.generalReturned(returned), "\(depth)")
        }
        let spaced = Data(#"{"type":"call", "id":1,"actor":{"system":"n","number":1},"target":"T","arguments":[2]}"#.utf8)
        #expect(CanonicalLine.call(spaced) == nil)
        #expect(try Request.decode(spaced) == .call(id: 1, ActorCall(system: "n", number: 1, target: "T", arguments: [.int(2)])))
    }

    @Test func whatTheActorFastPathsTakeTheGeneralDecoderReadsTheSameWay() {
        Self.expectFastPathsAgree(FuzzSeed(0xCA11_0032), rounds: 20_000, base: { round, generator in
            func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &generator)] }
            let id = Int.random(in: -5...99_999, using: &generator)
            return round.isMultiple(of: 2)
                ? Array(Reply.returned(id: id, value: pick([SkyNetWire.JSONValue?.none] + Self.values.prefix(10).map(Optional.some))).line.dropLast())
                : Array(Request.call(id: id, ActorCall(system: pick(["a", "node2"]), number: Int.random(in: 1...50, using: &generator),
                                                       target: "$s1M1AC1fyyYaKFTE", arguments: [pick(Array(Self.values.prefix(10)))])).line.dropLast())
        }, [
            { line in CanonicalLine.returned(line).map { Self.generalReturned(line) == $0 } },
            { line in CanonicalLine.call(line).map { Self.generalCall(line) == $0 } },
        ])
    }

    @Test func truncatedActorLinesNeverCrashAndNeverTakeTheFastPath() {
        let call = Request.call(id: 3, ActorCall(system: "n", number: 2, target: "T", arguments: [.object(["k": .int(1)])])).line.dropLast()
        let returned = Reply.returned(id: 3, value: .array([.int(1), .string("x")])).line.dropLast()
        for cut in 0..<call.count { #expect(CanonicalLine.call(Data(call.prefix(cut))) == nil) }
        for cut in 0..<returned.count { #expect(CanonicalLine.returned(Data(returned.prefix(cut))) == nil) }
    }
}
