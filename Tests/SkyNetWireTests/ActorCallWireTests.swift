import Foundation
import Testing
@testable import SkyNetWire

/// The `call` request and its replies as lines, and the bounds a node holds a call to.
struct ActorCallWireTests {
    let call = ActorCall(system: "beta", number: 3, target: "$s4Demo7GreeterC5greetyS2SYaKFTE", generics: ["Self"],
                         arguments: [.string("ada"), .object(["n": .int(2), "tags": .array([.null, .bool(true)])])])

    @Test func aCallAndItsRepliesReadBackAsTheyWereWritten() throws {
        #expect(try Request.decode(Data(call.line(id: 9))) == .call(id: 9, call))
        let bare = ActorCall(system: "beta", number: 1, target: "t", arguments: [])
        #expect(!String(decoding: bare.line(id: 1), as: UTF8.self).contains("generics"))
        #expect(try Request.decode(Data(bare.line(id: 1))) == .call(id: 1, bare))
        for reply in [Reply.returned(id: 9, value: .string("hello")), .returned(id: 9, value: nil),
                      .returned(id: 9, value: .object(["a": .array([.int(1), .double(0.5)])])),
                      .threw(id: 9, type: "Oops", message: "oops \"7\"\n")] {
            #expect(try Reply.decode(Data(reply.line)) == reply)
            #expect(reply.requestID == 9)
        }
    }

    @Test(arguments: [
        (#"{"type":"call","id":1,"target":"t","arguments":[]}"#, "actor"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":0},"target":"t","arguments":[]}"#, "actor.number"),
        (#"{"type":"call","id":1,"actor":{"system":"","number":1},"target":"t","arguments":[]}"#, "actor.system"),
        (#"{"type":"call","id":1,"actor":{"system":"a\nb","number":1},"target":"t","arguments":[]}"#, "actor.system"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":1},"target":"","arguments":[]}"#, "target"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":1},"target":"t"}"#, "arguments"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":1},"target":"t","arguments":{}}"#, "arguments"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":1},"target":"t","generics":"Self","arguments":[]}"#, "generics"),
        (#"{"type":"call","id":1,"actor":{"system":"b","number":1},"target":"t","generics":[1],"arguments":[]}"#, "generics"),
    ])
    func aMalformedCallIsABadRequestNamingTheField(line: String, field: String) {
        expectBadRequest(line, naming: field)
    }

    @Test func aCallOverItsBoundsIsRefused() {
        let long = ActorCall(system: "b", number: 1, target: String(repeating: "x", count: ActorCall.maxTargetBytes + 1), arguments: [])
        #expect(throws: WireError.self) { try Request.decode(Data(long.line(id: 1))) }
        let many = ActorCall(system: "b", number: 1, target: "t", arguments: Array(repeating: .null, count: ActorCall.maxArguments + 1))
        #expect(throws: WireError.self) { try Request.decode(Data(many.line(id: 1))) }
        let system = ActorCall(system: String(repeating: "s", count: 129), number: 1, target: "t", arguments: [])
        #expect(throws: WireError.self) { try Request.decode(Data(system.line(id: 1))) }
    }
}

/// `line` (a request with id 1) is refused as a `bad-request` that carries the id and names `field`.
func expectBadRequest(_ line: String, naming field: String, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try Request.decode(Data(line.utf8))
        Issue.record("accepted: \(line)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == .badRequest && error.id == 1, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message?.contains(field) == true, "\(error)", sourceLocation: sourceLocation)
    }
}
