import Foundation
import Testing
@testable import SkyNetWire

/// The `spawn` and `lookup` requests, the `spawned` reply and a welcome's `actors`, as lines.
struct ActorSpawnWireTests {
    @Test func spawnsLookupsAndTheirRepliesReadBackAsTheyWereWritten() throws {
        for spawn in [ActorSpawn(type: "Worker"), ActorSpawn(type: "Worker", name: "w1", arguments: .object(["label": .string("x")])),
                      ActorSpawn(type: "Pair<Int, Int>", arguments: .null)] {
            #expect(try Request.decode(Data(spawn.line(id: 4))) == .spawn(id: 4, spawn))
        }
        #expect(try Request.decode(Data(Request.lookup(id: 5, name: "w1").line)) == .lookup(id: 5, name: "w1"))
        let spawned = Reply.spawned(id: 4, system: "node1-1a2b3c4d", number: 12)
        #expect(try Reply.decode(Data(spawned.line)) == spawned)
        #expect(spawned.requestID == 4)
        let welcome = Reply.welcome(version: 1, name: "node1", capacity: 4, jobs: nil,
                                    actors: ActorOffer(system: "node1-1a2b3c4d", build: "0123456789abcdef"))
        #expect(try Reply.decode(Data(welcome.line)) == welcome)
        let pong = Reply.pong(id: 2, Pong(name: "n", running: 0, capacity: 4, completed: 1, failed: 0, actors: ["ScanSystem": 3, "Other": 0]))
        #expect(try Reply.decode(Data(pong.line)) == pong)
        let bare = Reply.pong(id: 2, Pong(name: "n", running: 0, capacity: 4, completed: 1, failed: 0))
        #expect(try Reply.decode(Data(bare.line)) == bare)
        #expect(throws: WireError.self) {
            try Reply.decode(Data(#"{"type":"pong","id":1,"name":"n","running":0,"capacity":1,"completed":0,"failed":0,"actors":{"A":-1}}"#.utf8))
        }
        let plain = Reply.welcome(version: 1, name: "node1", capacity: 4, jobs: nil)
        #expect(!String(decoding: plain.line, as: UTF8.self).contains("actors"))
        #expect(try Reply.decode(Data(plain.line)) == plain)
    }

    @Test(arguments: [
        (#"{"type":"spawn","id":1}"#, "actor_type"),
        (#"{"type":"spawn","id":1,"actor_type":""}"#, "actor_type"),
        (#"{"type":"spawn","id":1,"actor_type":"W\u0007"}"#, "actor_type"),
        (#"{"type":"spawn","id":1,"actor_type":"W","name":7}"#, "name"),
        (#"{"type":"spawn","id":1,"actor_type":"W","name":"a\nb"}"#, "name"),
        (#"{"type":"lookup","id":1}"#, "name"),
        (#"{"type":"lookup","id":1,"name":""}"#, "name"),
    ])
    func aMalformedSpawnOrLookupIsABadRequestNamingTheField(line: String, field: String) {
        expectBadRequest(line, naming: field)
    }

    @Test func aLongTypeOrNameIsRefused() {
        let long = String(repeating: "x", count: ActorSpawn.maxNameBytes + 1)
        #expect(throws: WireError.self) { try Request.decode(Data(ActorSpawn(type: long).line(id: 1))) }
        #expect(throws: WireError.self) { try Request.decode(Data(ActorSpawn(type: "W", name: long).line(id: 1))) }
        #expect(throws: WireError.self) { try Request.decode(Data(Request.lookup(id: 1, name: long).line)) }
    }

    @Test(arguments: [
        #"{"type":"welcome","version":1,"name":"n","capacity":1,"actors":"x"}"#,
        #"{"type":"welcome","version":1,"name":"n","capacity":1,"actors":{"system":"s"}}"#,
        #"{"type":"welcome","version":1,"name":"n","capacity":1,"actors":{"system":"","build":"b"}}"#,
        #"{"type":"spawned","id":1,"actor":{"system":"s","number":0}}"#,
        #"{"type":"spawned","id":1,"actor":{"number":1}}"#,
    ])
    func aMalformedWelcomeOrSpawnedIsRefused(line: String) {
        #expect(throws: WireError.self) { try Reply.decode(Data(line.utf8)) }
    }
}
