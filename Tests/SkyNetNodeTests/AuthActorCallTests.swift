import Distributed
import Foundation
import Testing
@testable import SkyNetActors
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// A call of a distributed actor on a token link: an encrypted call runs; one tampered with
/// (altered, replayed, reordered, in plain, its length changed, cut) ends the link and runs
/// nothing.
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
                var client = try EncryptedClient(port: node.port, token: Self.token)
                defer { client.close() }
                let sealed = client.frame(text(1))
                try client.sendRaw(sealed)
                let first = try client.read()
                switch tamper {
                case .plain: try client.sendRaw(Array((text(2) + "\n").utf8))
                case .altered:
                    var frame = client.frame(text(2))
                    frame[frame.count / 2] ^= 0x20
                    try client.sendRaw(frame)
                case .replayed: try client.sendRaw(sealed)
                case .reordered:
                    _ = client.frame(text(2))  // made, never sent
                    try client.send(text(3))
                case .length:
                    var frame = client.frame(text(2))
                    frame[3] &-= 1
                    try client.sendRaw(frame + [0])
                case .truncated:
                    try client.sendRaw(Array(client.frame(text(2)).dropLast(3)))
                    client.socket.shutdown(reading: false, writing: true)
                }
                return (first, try client.readToEnd(silence: .seconds(10)), client.closed)
            }
            #expect(first.flatMap(jsonFields)?["value"] as? Int == 1, "the encrypted call: \(first ?? "nothing") for \(text(1))")
            #expect(closed, "the node kept the connection open")
            #expect(after.isEmpty, "the node answered a bad line: \(after)")
            #expect(runs.value == 1, "\(log.all)")
        }
        _ = actor
    }
}
