import Distributed
import SkyNetRuntime
import SkyNetWire

/// The actor system of a SkyNet cluster: `distributed actor`s whose `ActorSystem` is this type
/// are called by their `ClusterActorID` wherever they live, with their arguments and results
/// as JSON (`Codable`).
///
/// An actor made with this system as its `actorSystem` is hosted here and callable from other
/// systems that can reach this one; a reference to an actor of another system resolves to a
/// proxy whose calls travel to that system.
public final class ClusterActorSystem: DistributedActorSystem, Sendable {
    /// Actors are called by the system that hosts them and their number there.
    public typealias ActorID = ClusterActorID
    /// Records a call's arguments as JSON.
    public typealias InvocationEncoder = ClusterInvocationEncoder
    /// Reads a call's arguments back on the host.
    public typealias InvocationDecoder = ClusterInvocationDecoder
    /// Takes what a method returned or threw on the host.
    public typealias ResultHandler = ClusterResultHandler
    /// Arguments and results are `Codable`, and travel as JSON.
    public typealias SerializationRequirement = any Codable

    /// The system's name: the first part of the ID of every actor it hosts.
    public let name: String

    /// The types this system makes when asked (`spawn`); its `build` is what a link compares.
    public let registry: ActorRegistry
    /// The calls this system ran for others, for `/metrics`.
    package let metrics = ActorMetrics()
    /// The most actors spawns may make here; more are refused (`tooManyActors`).
    public let maxActors: Int

    /// The longest a call may take, from when it is made until its reply (`CallOptions` may
    /// ask for less); then it fails with `deadline`, and is cancelled on its node.
    public let callTimeout: Duration
    /// What the deadlines of calls are timed by.
    let clock: any TimerClock

    /// A link to another system: the node it is, its channel, the calls this system has in
    /// flight on it (what `.leastLoaded` weighs; at most `ActorCall.maxCallsPerConnection`)
    /// and those waiting for room, in turn.
    struct Link {
        let node: String
        let number: Int
        let channel: any ActorCallChannel
        /// Calls for systems with no link of their own go this way (a node's caller, which
        /// relays them to the node that hosts their actor).
        var routesOthers = false
        var calls = 0
        var waiting: [Int: Waiter] = [:]
        /// The waiting calls' tickets in turn, from `nextTurn` (a turn whose call stopped
        /// waiting is skipped).
        var turns: [Int] = []
        var nextTurn = 0
    }

    /// A call waiting for room on a link; its timer fails it at its deadline. It is resumed
    /// with the number and node of the link it has a place on.
    struct Waiter {
        let continuation: CheckedContinuation<(Int, String), any Error>
        let timer: TimerTicket
    }

    /// The actors this system hosts, the ones spawns made, and the links to the others: one
    /// lock, so that a check (a free slot, a name not taken, the least loaded link) and what
    /// it decides happen in one step.
    struct State {
        var lastNumber = 0
        /// Held weakly: an actor lives as long as its users hold it; its `resignID` removes it.
        var actors: [ClusterActorID: WeakActor] = [:]
        /// What spawns made here, held while their owner is (`spawnHere`): nobody here holds
        /// them else.
        var spawned: [ClusterActorID: any DistributedActor] = [:]
        /// The owner of each actor a spawn of another system made (a connection's number).
        var owners: [ClusterActorID: Int] = [:]
        /// Spawns under way here, counted against `maxActors` before their factory runs.
        var spawning = 0
        /// The names actors were spawned with here, and those of spawns under way (nil).
        var names: [String: NamedActor?] = [:]
        /// The links to other systems, by system name.
        var links: [String: Link] = [:]
        var lastLink = 0
        var lastWaiter = 0
        /// How many actors this system placed on each node (by system name), over reconnects.
        var placed: [String: Int] = [:]
        /// The next turn of `.spread`.
        var spreadTurn = 0
        /// The `@Resolvable` stubs (`$Protocol`) whose calls the actors here take.
        var stubs: [any DistributedActor.Type] = []
        /// The actors this system spawned with `RestartPolicy.onNodeLoss`, by the ID their
        /// references carry: how to make each again, and where it is now.
        var restartable: [ClusterActorID: Restartable] = [:]
        /// Those being made again: their calls wait for the new one.
        var restarting: [ClusterActorID: AsyncSignal<Void>] = [:]
        /// Whether calls that arrive for a linked system's actors are passed on to it (`relayCalls`).
        var relays = false
        /// What to run when an actor is gone (`whenTerminated`), by the ID its references carry.
        var watchers: [ClusterActorID: [@Sendable (ClusterActorID) -> Void]] = [:]
    }
    let state = Locked(State())

    /// A call's target for an actor type, with its type arguments (none, or a stub's `Self`).
    struct CheckedTargetKey: Hashable {
        let type: ObjectIdentifier
        let target: String
        let generics: [String]
    }
    /// The targets calls named that the host checked and let run (`checkedTarget`): the
    /// type's label and the method's name.
    private let checkedTargets = Locked<[CheckedTargetKey: (String, String)]>([:])

    /// Makes a system named `name` (the name other systems reach it by) that makes the types
    /// of `registry` when asked, at most `maxActors` of them.
    public convenience init(name: String, registry: ActorRegistry = ActorRegistry(), maxActors: Int = 10_000, callTimeout: Duration = .seconds(60)) {
        self.init(name: name, registry: registry, maxActors: maxActors, callTimeout: callTimeout, clock: DeadlineTimer.shared)
    }

    /// A system whose call deadlines are timed by `clock`.
    package init(name: String, registry: ActorRegistry = ActorRegistry(), maxActors: Int = 10_000, callTimeout: Duration = .seconds(60),
                 clock: any TimerClock) {
        self.name = name
        self.registry = registry
        self.maxActors = max(0, maxActors)
        self.callTimeout = max(.zero, callTimeout)
        self.clock = clock
    }

    // MARK: The life of a local actor

    /// A new actor's ID: this system's name and the next number.
    public func assignID<Act: DistributedActor>(_ actorType: Act.Type) -> ClusterActorID where Act.ID == ClusterActorID {
        state.withLock { state in
            state.lastNumber += 1
            return ClusterActorID(system: name, number: state.lastNumber)
        }
    }

    /// An actor made on this system can be called from now on (it is held weakly).
    public func actorReady<Act: DistributedActor>(_ actor: Act) where Act.ID == ClusterActorID {
        state.withLock { $0.actors[actor.id] = WeakActor(actor) }
    }

    /// An actor of this system is gone: calls to it are refused from now on.
    public func resignID(_ id: ClusterActorID) {
        let watchers = state.withLock { state in
            state.actors.removeValue(forKey: id)
            return state.watchers.removeValue(forKey: id) ?? []
        }
        for watcher in watchers { watcher(id) }
    }

    /// The actor hosted here with `id`; nil for another system's actor (the runtime then makes
    /// a proxy whose calls travel); throws `actorNotFound` for one of this system that is gone.
    public func resolve<Act: DistributedActor>(id: ClusterActorID, as actorType: Act.Type) throws -> Act?
    where Act.ID == ClusterActorID {
        guard id.system == name else { return nil }  // another system's: the runtime makes a proxy
        guard let actor = state.withLock({ $0.actors[id]?.actor }) as? Act else {
            throw ClusterActorSystemError.actorNotFound(id)
        }
        return actor
    }

    /// Runs a call that arrived for an actor hosted here, or, on a system that relays, passes
    /// one for a linked system on to it; never throws: what went wrong is the reply.
    package func execute(_ call: ActorCall) async -> ActorReply {
        let id = call.actor
        if id.system != name, state.withLock({ $0.relays && $0.links[id.system] != nil }) {
            return await relay(call)
        }
        guard id.system == name, let actor = state.withLock({ $0.actors[id]?.actor }) else {
            metrics.record(type: ActorMetrics.unknown, method: ActorMetrics.unknown, outcome: .refused, seconds: nil)
            return .refused(.actorNotFound(id))
        }
        return await execute(call, on: actor)
    }

    private func execute<Act: DistributedActor>(_ call: ActorCall, on actor: Act) async -> ActorReply {
        // A method of the actor's own type, or a `@Resolvable` protocol's through its stub
        // (whose type argument, `Self`, the runtime checks the actor against): nothing else runs.
        guard let (typeLabel, method) = checkedTarget(call, of: Act.self) else {
            let target = String(call.target.prefix(ActorCall.maxTargetBytes))
            metrics.record(type: label(of: Act.self), method: ActorMetrics.unknown, outcome: .refused, seconds: nil)
            return call.generics.isEmpty || call.generics == [ActorCall.selfType] ? .refused(.unknownTarget(target)) : .refused(.genericMethod(target))
        }
        let started = ContinuousClock.now
        let reply = await run(call, on: actor)
        let outcome: ActorMetrics.Outcome = switch reply {
        case .returned: .returned
        case .threw: .threw
        case .refused: .refused
        }
        metrics.record(type: typeLabel, method: method, outcome: outcome, seconds: (ContinuousClock.now - started).seconds)
        return reply
    }

    /// The label of `type` and the name of the method `call` names, when the actor may run it;
    /// nil when it may not. What passed is remembered: the check reads the whole target and
    /// searches the runtime's table of functions. What is remembered is bounded by the
    /// program: only targets that name a thunk compiled into it, for the types it hosts.
    private func checkedTarget(_ call: ActorCall, of type: any DistributedActor.Type) -> (String, String)? {
        let key = CheckedTargetKey(type: ObjectIdentifier(type), target: call.target, generics: call.generics)
        if let known = checkedTargets.withLock({ $0[key] }) { return known }
        let method: String? = switch call.generics {
        case []: ActorTarget.method(call.target, of: type)
        case [ActorCall.selfType]: resolvableStubs.lazy.compactMap { ActorTarget.method(call.target, of: $0) }.first
        default: nil
        }
        guard let method else { return nil }
        let checked = (label(of: type), method)
        checkedTargets.withLock { $0[key] = checked }
        return checked
    }

    /// How metrics and status name an actor type: its declared name, else the type's own.
    func label(of type: any DistributedActor.Type) -> String {
        registry.name(of: type) ?? String(describing: type)
    }

    /// Runs a call whose target the host checked.
    private func run<Act: DistributedActor>(_ call: ActorCall, on actor: Act) async -> ActorReply {
        var decoder = ClusterInvocationDecoder(arguments: call.arguments, generics: call.generics, system: self, actorType: Act.self)
        let handler = ClusterResultHandler(target: call.target)
        do {
            try await executeDistributedTarget(on: actor, target: RemoteCallTarget(call.target),
                                               invocationDecoder: &decoder, handler: handler)
        } catch let refusal as CallRefusal {
            return .refused(refusal.reason)
        } catch {
            return .refused(.unknownTarget(call.target))
        }
        return handler.result ?? .refused(.unknownTarget(call.target))
    }

    private var resolvableStubs: [any DistributedActor.Type] { state.withLock { $0.stubs } }

    /// Lets callers that hold only a `@Resolvable` protocol's stub (`$Counter`) call the actors
    /// here that conform to it; other callers of the protocol's methods are refused.
    public func acceptCalls(through stub: any DistributedActor.Type) {
        state.withLock { $0.stubs.append(stub) }
    }

    // MARK: Other systems

    /// Calls to actors of the system `system`, the node `node` (by default the system's
    /// name), go through `channel` from now on; returns the link's number, for `disconnect`.
    @discardableResult
    /// `routesOthers`: calls for systems that have no link here go this way too.
    package func connect(to system: String, node: String? = nil, through channel: any ActorCallChannel, routesOthers: Bool = false) -> Int {
        let (number, admitted) = state.withLock { state in
            state.lastLink += 1
            var link = Link(node: node ?? system, number: state.lastLink, channel: channel, routesOthers: routesOthers)
            // The calls that waited for room on a link this one replaces wait here now.
            if let old = state.links[system] { (link.waiting, link.turns, link.nextTurn) = (old.waiting, old.turns, old.nextTurn) }
            let admitted = link.admitWaiters()
            state.links[system] = link
            return (link.number, admitted)
        }
        resume(admitted, link: number, node: node ?? system)
        return number
    }

    /// The link `number` to `system` is gone: calls to its actors have no route (unless a
    /// newer link to it came meanwhile, which stays), and those waiting for room on it fail.
    /// `nodeLost`: the node is taken for dead (not this system stopping its links): its
    /// actors with a restart policy are made again elsewhere, the others are terminated.
    package func disconnect(from system: String, link number: Int, nodeLost: Bool = true) {
        let (waiting, lost) = state.withLock { state -> ([Waiter], LostActors) in
            guard let link = state.links[system], link.number == number else { return ([], LostActors()) }
            state.links.removeValue(forKey: system)
            return (Array(link.waiting.values), nodeLost ? Self.loseActors(of: system, &state) : LostActors())
        }
        for waiter in waiting {
            clock.cancel(waiter.timer)
            waiter.continuation.resume(throwing: ClusterActorSystemError.noRoute(system: system))
        }
        handle(lost)
    }

    /// The nodes linked to this system whose actors it can call, by name, sorted.
    public var nodes: [String] {
        state.withLock { $0.links.values.map(\.node) }.sorted()
    }
}

/// A hosted actor, held weakly (the lock of `ClusterActorSystem.state` guards the table).
final class WeakActor: Sendable {
    weak let actor: (any DistributedActor)?

    init(_ actor: any DistributedActor) {
        self.actor = actor
    }
}
