import Distributed
import Foundation
import Testing
@testable import SkyNetActors
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// A call of a distributed actor on a token link: a sealed call runs; one tampered with
/// (altered, replayed, reordered, unsealed) ends the link and runs nothing.
extension AuthHandshakeTests {
    distributed actor Tallied {
        typealias ActorSystem = ClusterActorSystem
        let runs: SkyNetTestSupport.Counter

        init(runs: SkyNetTestSupport.Counter, actorSystem: ClusterActorSystem) {
            self.runs = runs
            self.actorSystem = actorSystem
        }

        distributed func touch() -> Int {
            runs.increment()
            return runs.value
        }
    }

    /// Keeps the calls a system sends instead of sending them (each "returns" 0).
    final class CapturingChannel: ActorCallChannel {
        private let calls = Locked<[ActorCall]>([])
        var isDraining: Bool { false }
        var captured: [ActorCall] { calls.withLock { $0 } }
        func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
            calls.withLock { $0.append(call) }
            return .returned(.int(0))
        }
        func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID { ClusterActorID(system: "x", number: 1) }
        func lookup(name: String, type: String) async throws -> ClusterActorID? { nil }
    }

    @Test(arguments: Tamper.allCases)
    func aTamperedCallLineEndsTheLinkAndRunsNothing(_ tamper: Tamper) async throws {
        let host = ClusterActorSystem(name: "beta-1")
        let runs = SkyNetTestSupport.Counter()
        let actor = Tallied(runs: runs, actorSystem: host)
        // The call's line as our system writes it, with the compiler's target.
        let caller = ClusterActorSystem(name: "caller"), capture = CapturingChannel()
        caller.connect(to: host.name, through: capture)
        _ = try await Tallied.resolve(id: actor.id, using: caller).touch()
        let call = try #require(capture.captured.first)
        let text: @Sendable (Int) -> String = { id in String(decoding: call.line(id: id), as: UTF8.self).trimmingCharacters(in: .newlines) }
        try await withTokenNode(actors: host) { node, log in
            let (first, after, closed) = try await onOwnThread(named: "test-hand") { () throws -> (String?, [String], Bool) in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                let key = try handshake(&client).transcript.coordinatorToNode
                let sealed = HandTranscript.seal(text(1), sequence: 0, key: key)
                try client.send(sealed)
                let raw = client.readLine()
                let first = raw.flatMap(unseal)?.json ?? raw
                switch tamper {
                case .plain: try client.send(text(2))
                case .altered: try client.send(HandTranscript.seal(text(2), sequence: 1, key: key).replacingOccurrences(of: #""id":2"#, with: #""id":3"#))
                case .replayed: try client.send(sealed)
                case .reordered: try client.send(HandTranscript.seal(text(3), sequence: 2, key: key))
                }
                return (first, client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(first.flatMap(jsonFields)?["value"] as? Int == 1, "the sealed call: \(first ?? "nothing") for \(text(1))")
            #expect(closed, "the node kept the connection open")
            #expect(after.isEmpty, "the node answered a bad line: \(after)")
            #expect(runs.value == 1, "\(log.all)")
        }
        _ = actor
    }
}
