import Distributed
import Testing
@testable import SkyNetActors
@testable import SkyNetRuntime
@testable import SkyNetWire

/// Calls between two systems in one process, through a channel that carries each call's
/// arguments and reply as JSON text and back, as a link would.
struct ClusterActorSystemTests {
    struct Shape: Codable, Equatable, Sendable {
        var name: String
        var corners: [Int]?
    }

    struct Oops: Error, CustomStringConvertible {
        let code: Int
        var description: String { "oops \(code)" }
    }

    distributed actor Greeter {
        typealias ActorSystem = ClusterActorSystem
        private(set) var calls = 0

        distributed func greet(_ name: String, times: Int) -> String {
            calls += 1
            return Array(repeating: "hello \(name)", count: times).joined(separator: ", ")
        }

        distributed func count() -> Int { calls }
        distributed func reset() { calls = 0 }
        distributed func fail(_ code: Int) throws { throw Oops(code: code) }
        distributed func echo(_ shape: Shape) -> Shape { shape }
        distributed func twice<Value: Codable & Sendable>(_ value: Value) -> [Value] { [value, value] }

        /// Calls `other` back, wherever it lives.
        distributed func callBack(_ other: Greeter) async throws -> String {
            try await other.greet("from \(id.system)", times: 1)
        }
    }

    /// Delivers calls to `host`, each argument and the reply written as JSON text and parsed
    /// again on the way.
    struct TextChannel: ActorCallChannel {
        let host: ClusterActorSystem
        var isDraining: Bool { false }

        func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
            let arguments = try call.arguments.map { try JSONParser.parse($0.bytes) }
            let reply = await host.execute(ActorCall(actor: call.actor, target: call.target, generics: call.generics, arguments: arguments))
            guard case .returned(let value?) = reply else { return reply }
            return .returned(try JSONParser.parse(value.bytes))
        }

        func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID {
            let arguments = try spawn.arguments.map { try JSONParser.parse($0.bytes) }
            do {
                return try await host.spawnHere(ActorSpawn(type: spawn.type, name: spawn.name, arguments: arguments))
            } catch let failure as ActorFactoryFailure {
                throw ClusterActorSystemError.remote(type: String(describing: type(of: failure.error)), message: "\(failure.error)")
            }
        }

        func lookup(name: String, type: String) async throws -> ClusterActorID? { host.lookupHere(name: name, type: type) }
    }

    /// Two systems, each with a channel to the other.
    static func pair() -> (ClusterActorSystem, ClusterActorSystem) {
        let alpha = ClusterActorSystem(name: "alpha"), beta = ClusterActorSystem(name: "beta")
        alpha.connect(to: "beta", through: TextChannel(host: beta))
        beta.connect(to: "alpha", through: TextChannel(host: alpha))
        return (alpha, beta)
    }

    @Test func aCallToAnActorOfAnotherSystemReturnsTypedValues() async throws {
        let (alpha, beta) = Self.pair()
        let greeter = Greeter(actorSystem: beta)
        let remote = try Greeter.resolve(id: greeter.id, using: alpha)
        #expect(__isRemoteActor(remote))
        #expect(try await remote.greet("ada", times: 2) == "hello ada, hello ada")
        #expect(try await remote.echo(Shape(name: "square", corners: [1, 2, 3, 4])) == Shape(name: "square", corners: [1, 2, 3, 4]))
        #expect(try await remote.echo(Shape(name: "blob", corners: nil)) == Shape(name: "blob", corners: nil))
        try await remote.reset()
        #expect(try await remote.count() == 0)
        #expect(try await greeter.count() == 0)  // the same actor, called locally
    }

    /// The host never takes a type from the wire: a method with type parameters of its own
    /// is refused, never run with a type the caller named.
    @Test func aGenericMethodIsRefusedAndRunsNothing() async throws {
        let (alpha, beta) = Self.pair()
        let greeter = Greeter(actorSystem: beta)
        let remote = try Greeter.resolve(id: greeter.id, using: alpha)
        let error = await #expect(throws: ClusterActorSystemError.self) { try await remote.twice(5) }
        guard case .genericMethod? = error else {
            Issue.record("refused as \(String(describing: error)), not as a generic method")
            return
        }
        #expect(try await greeter.twice("local") == ["local", "local"])  // a local call is an ordinary one
    }

    @Test func whatTheMethodThrowsArrivesWithItsTypeAndDescription() async throws {
        let (alpha, beta) = Self.pair()
        let greeter = Greeter(actorSystem: beta)
        let remote = try Greeter.resolve(id: greeter.id, using: alpha)
        await #expect(throws: ClusterActorSystemError.remote(type: "Oops", message: "oops 7")) { try await remote.fail(7) }
    }

    /// A reference to an actor of alpha, passed to an actor of beta, is called back from beta.
    @Test func aReferencePassedToAnotherSystemIsCalledBack() async throws {
        let (alpha, beta) = Self.pair()
        let home = Greeter(actorSystem: alpha), away = Greeter(actorSystem: beta)
        let remoteAway = try Greeter.resolve(id: away.id, using: alpha)
        #expect(try await remoteAway.callBack(home) == "hello from beta")
        #expect(try await home.count() == 1)
    }

    /// A method that ran and threw is heard as having run, even when what it threw is one of
    /// the system's own errors (a call it made itself found no route).
    @Test func anErrorOfTheSystemThrownByTheMethodItselfIsWhatItThrew() async throws {
        let (alpha, beta) = Self.pair()
        let away = Greeter(actorSystem: beta)
        let stranger = try Greeter.resolve(id: ClusterActorID(system: "gamma", number: 1), using: beta)
        let remote = try Greeter.resolve(id: away.id, using: alpha)
        let error = await #expect(throws: ClusterActorSystemError.self) { try await remote.callBack(stranger) }
        guard case .remote(let type, let message)? = error else {
            Issue.record("heard as \(String(describing: error))")
            return
        }
        #expect(type == "ClusterActorSystemError" && message.contains("gamma"))
    }

    @Test func anActorThatIsGoneOrASystemWithoutARouteIsRefused() async throws {
        let (alpha, beta) = Self.pair()
        var greeter: Greeter? = Greeter(actorSystem: beta)
        let id = try #require(greeter?.id)
        greeter = nil  // released: its ID is resigned
        let remote = try Greeter.resolve(id: id, using: alpha)
        await #expect(throws: ClusterActorSystemError.actorNotFound(id)) { try await remote.count() }
        #expect(throws: ClusterActorSystemError.actorNotFound(id)) { try Greeter.resolve(id: id, using: beta) }
        let stranger = try Greeter.resolve(id: ClusterActorID(system: "gamma", number: 1), using: alpha)
        await #expect(throws: ClusterActorSystemError.noRoute(system: "gamma")) { try await stranger.count() }
    }

    /// A method the actor does not have (another build's identifier) or arguments that do not
    /// decode never run.
    @Test func anUnknownMethodOrBadArgumentsRunNothing() async throws {
        let beta = ClusterActorSystem(name: "beta")
        let greeter = Greeter(actorSystem: beta)
        let unknown = await beta.execute(ActorCall(actor: greeter.id, target: "$s5Other7GreeterC5greetyyYaKFTE", arguments: []))
        #expect(unknown == .refused(.unknownTarget("$s5Other7GreeterC5greetyyYaKFTE")))
        // The identifier of greet(_:times:) as the compiler made it, with a number for the name.
        let target = try #require(await greetTarget(beta, greeter))
        let bad = await beta.execute(ActorCall(actor: greeter.id, target: target, arguments: [.int(1), .int(2)]))
        guard case .refused(.badValue(let reason)) = bad else {
            Issue.record("a number was taken as a name: \(bad)")
            return
        }
        #expect(reason.contains("argument 1"))
        #expect(try await greeter.count() == 1)  // only the call that showed the identifier ran
    }

    /// The target identifier a call of `greet` carries, seen by a channel.
    func greetTarget(_ host: ClusterActorSystem, _ greeter: Greeter) async throws -> String? {
        let caller = ClusterActorSystem(name: "caller")
        let recorder = RecordingChannel(host: host)
        caller.connect(to: host.name, through: recorder)
        _ = try await Greeter.resolve(id: greeter.id, using: caller).greet("x", times: 0)
        return recorder.targets.first
    }

    final class RecordingChannel: ActorCallChannel {
        let host: ClusterActorSystem
        var isDraining: Bool { false }
        private let seen = Locked<[String]>([])
        init(host: ClusterActorSystem) { self.host = host }
        var targets: [String] { seen.withLock { $0 } }

        func call(_ call: ActorCall, timeout: Duration) async throws -> ActorReply {
            seen.withLock { $0.append(call.target) }
            return await host.execute(call)
        }

        func spawn(_ spawn: ActorSpawn, timeout: Duration) async throws -> ClusterActorID { try await host.spawnHere(spawn) }
        func lookup(name: String, type: String) async throws -> ClusterActorID? { host.lookupHere(name: name, type: type) }
    }
}

/// A caller may hold a protocol's stub (`$Counter`) without the concrete type.
@Resolvable
protocol Counter: DistributedActor where ActorSystem == ClusterActorSystem {
    distributed func next() -> Int
}

distributed actor Ticker: Counter {
    typealias ActorSystem = ClusterActorSystem
    private var value = 0
    distributed func next() -> Int {
        value += 1
        return value
    }
}

struct ResolvableProtocolTests {
    @Test func aStubOfAResolvableProtocolCallsTheActorBehindItOnceTheHostAcceptsIt() async throws {
        let (alpha, beta) = ClusterActorSystemTests.pair()
        let ticker = Ticker(actorSystem: beta)
        let counter = try $Counter.resolve(id: ticker.id, using: alpha)
        let refused = await #expect(throws: ClusterActorSystemError.self) { try await counter.next() }
        guard case .unknownTarget? = refused else {
            Issue.record("a stub the host did not accept was \(String(describing: refused))")
            return
        }
        beta.acceptCalls(through: $Counter.self)
        #expect(try await counter.next() == 1)
        #expect(try await counter.next() == 2)
    }

    /// The runtime would run a thunk on any actor it is handed: a method of one type named in a
    /// call to an actor of another is refused before it runs, through a stub as well.
    @Test func aMethodOfAnotherTypeIsRefusedAndRunsNothing() async throws {
        let (alpha, beta) = ClusterActorSystemTests.pair()
        beta.acceptCalls(through: $Counter.self)
        let ticker = Ticker(actorSystem: beta), greeter = ClusterActorSystemTests.Greeter(actorSystem: beta)
        let recorder = ClusterActorSystemTests.RecordingChannel(host: beta)
        alpha.connect(to: "beta", through: recorder)
        _ = try await Ticker.resolve(id: ticker.id, using: alpha).next()
        _ = try await $Counter.resolve(id: ticker.id, using: alpha).next()
        let (own, throughStub) = (recorder.targets[0], recorder.targets[1])
        let onGreeter = await beta.execute(ActorCall(actor: greeter.id, target: own, arguments: []))
        #expect(onGreeter == .refused(.unknownTarget(own)))
        let stubOnGreeter = await beta.execute(ActorCall(actor: greeter.id, target: throughStub, generics: [ActorCall.selfType], arguments: []))
        guard case .refused = stubOnGreeter else {
            Issue.record("a Counter call ran on a Greeter: \(stubOnGreeter)")
            return
        }
        let ownWithSelf = await beta.execute(ActorCall(actor: ticker.id, target: own, generics: [ActorCall.selfType], arguments: []))
        #expect(ownWithSelf == .refused(.unknownTarget(own)))
        #expect(try await ticker.next() == 3)  // only the two calls above ran
        // Texts the runtime's demangler is known to crash on are never given to it, nor a
        // signature of nonsense after the actor's type and a method's name.
        let method = try #require(own.range(of: "4next")).upperBound
        let signatures = ["6sectorSS$Si_tYaKFTE", "xxQpyYaKFTE", "SiXmyYaKFTE", "SSSgyYaKFTE"].map { String(own[..<method]) + $0 }
        let hostile = ["$s3abcLlfMf_", String(own.dropLast(2)) + "LlfMf_TE", String(own.dropLast(2)) + "0aTE"] + signatures
        for nonsense in ["", "$s", "greet", "$s" + String(repeating: "9", count: 5000), "$sSi"] + hostile {
            #expect(await beta.execute(ActorCall(actor: ticker.id, target: nonsense, arguments: [])) == .refused(.unknownTarget(String(nonsense.prefix(1024)))))
        }
    }
}
