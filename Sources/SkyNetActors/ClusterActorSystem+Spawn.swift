import Distributed
import SkyNetRuntime
import SkyNetWire

/// Where a spawn puts its actor.
public enum ActorPlacement: Sendable, Hashable {
    /// On the linked node of this name (as the cluster names it: `node1`, `gpu1`).
    case node(String)
    /// On the linked node this system has the fewest calls in flight to, then the one it has
    /// placed the fewest actors on, then the first by name.
    case leastLoaded
    /// On each linked node in turn, by name.
    case spread
    /// On this system.
    case local
}

extension ClusterActorSystem {
    // MARK: Spawning

    /// Makes an actor of `type` (declared in this system's registry, as in every copy of the
    /// program) where `placement` says, and returns it: a remote reference whose calls travel
    /// there, or the actor itself for `.local`. `name`, unique on that system, finds it later
    /// (`lookup`); `restart` says what becomes of it when its node's link ends.
    public func spawn<Act: DistributedActor>(
        _ type: Act.Type, on placement: ActorPlacement = .leastLoaded, name: String? = nil, restart: RestartPolicy = .never
    ) async throws -> Act where Act.ActorSystem == ClusterActorSystem {
        try await spawn(type, arguments: nil, on: placement, name: name, restart: restart)
    }

    /// Makes an actor of `type` from `arguments` (its factory's, declared with
    /// `declare(_:as:arguments:make:)`) where `placement` says, and returns it.
    public func spawn<Act: DistributedActor, Arguments: Codable & Sendable>(
        _ type: Act.Type, with arguments: Arguments, on placement: ActorPlacement = .leastLoaded, name: String? = nil,
        restart: RestartPolicy = .never
    ) async throws -> Act where Act.ActorSystem == ClusterActorSystem {
        let value: JSONValue
        do { value = try CodableJSON.encode(arguments) } catch { throw ClusterActorSystemError.badValue("the spawn arguments: \(error)") }
        return try await spawn(type, arguments: value, on: placement, name: name, restart: restart)
    }

    private func spawn<Act: DistributedActor>(
        _ type: Act.Type, arguments: JSONValue?, on placement: ActorPlacement, name: String?, restart: RestartPolicy
    ) async throws -> Act where Act.ActorSystem == ClusterActorSystem {
        guard let typeName = registry.name(of: type) else { throw ClusterActorSystemError.undeclaredType(String(describing: type)) }
        if let name, !ActorSpawn.isName(name) {
            throw ClusterActorSystemError.badValue("an actor's name is 1 to \(ActorSpawn.maxNameBytes) bytes of printable text")
        }
        let request = ActorSpawn(type: typeName, name: name, arguments: arguments)
        let id: ClusterActorID
        if let system = try place(placement) {
            do {
                id = try await spawn(request, on: system)
            } catch {
                state.withLock { $0.placed[system, default: 1] -= 1 }
                throw error
            }
            remember(id, request, restart: restart)
        } else {
            do {
                id = try await spawnHere(request)
            } catch let failure as ActorFactoryFailure {
                throw failure.error
            }
        }
        return try Act.resolve(id: id, using: self)
    }

    /// Asks the linked system `system` to make an actor, within the call deadline.
    func spawn(_ request: ActorSpawn, on system: String) async throws -> ClusterActorID {
        let timeout = min(Self.callOptions.timeout ?? callTimeout, callTimeout)
        let id = try await onLink(system, deadline: clock.now + timeout, timeout: timeout) { channel in
            try await channel.spawn(request, timeout: timeout)
        }
        guard id.system == system else {
            throw ClusterActorSystemError.badValue("the node of \(system) answered the spawn with an actor of \(id.system)")
        }
        return id
    }

    /// The system a spawn goes to (counted as placed there in the same step); nil: here.
    func place(_ placement: ActorPlacement) throws(ClusterActorSystemError) -> String? {
        try state.withLock { state throws(ClusterActorSystemError) in
            let links = state.links.filter { !$0.value.channel.isDraining }.sorted { $0.value.node < $1.value.node }
            let chosen: (key: String, value: Link)
            switch placement {
            case .local:
                return nil
            case .node(let node):
                guard let link = links.first(where: { $0.value.node == node }) else {
                    throw .noNode("no node named \(node) is linked (linked: \(links.map(\.value.node).joined(separator: ", ")))")
                }
                chosen = link
            case .leastLoaded:
                guard let link = links.min(by: { ($0.value.calls, state.placed[$0.key, default: 0]) < ($1.value.calls, state.placed[$1.key, default: 0]) }) else {
                    throw .noNode("no node that hosts actors is linked")
                }
                chosen = link
            case .spread:
                guard !links.isEmpty else { throw .noNode("no node that hosts actors is linked") }
                chosen = links[state.spreadTurn % links.count]
                state.spreadTurn += 1
            }
            state.placed[chosen.key, default: 0] += 1
            return chosen.key
        }
    }

    /// Makes an actor here from a spawn request (another system's, or this one's own):
    /// refused for a type not declared, a name taken, `maxActors` reached or arguments that do
    /// not decode; what its factory threw comes wrapped in an `ActorFactoryFailure`. With an
    /// `owner` (the connection that asked), the actor is held until `release(owner:)`; without,
    /// as long as this system.
    package func spawnHere(_ request: ActorSpawn, owner: Int? = nil) async throws -> ClusterActorID {
        guard let declaration = registry.declarations[request.type] else {
            throw ClusterActorSystemError.undeclaredType(request.type)
        }
        try state.withLock { state throws(ClusterActorSystemError) in
            guard state.spawned.count + state.spawning < maxActors else {
                throw .tooManyActors("\(name) hosts its most, \(maxActors) actors")
            }
            if let name = request.name {
                guard state.names[name] == nil else { throw .nameTaken(name) }
                state.names[name] = .some(nil)
            }
            state.spawning += 1
        }
        let made: (any DistributedActor, ClusterActorID)
        do {
            do {
                made = try await declaration.make(request.arguments, self)
            } catch let refusal as SpawnArgumentsRefusal {
                throw ClusterActorSystemError.badValue(refusal.reason)
            } catch {
                throw ActorFactoryFailure(error: error)
            }
            guard made.1.system == name else {
                throw ClusterActorSystemError.badValue("the factory of \(request.type) made its actor on the system \(made.1.system), not on \(name)")
            }
            // A spawn given up meanwhile (its caller cancelled it, its link ended) keeps nothing.
            try Task.checkCancellation()
        } catch {
            state.withLock { state in
                state.spawning -= 1
                if let name = request.name { state.names.removeValue(forKey: name) }
            }
            throw error
        }
        state.withLock { state in
            state.spawning -= 1
            state.spawned[made.1] = made.0
            if let owner { state.owners[made.1] = owner }
            if let name = request.name { state.names[name] = NamedActor(id: made.1, type: request.type) }
        }
        return made.1
    }

    /// The owner of spawned actors is gone (the connection that asked for them closed): they
    /// are let go, with their names, and no longer count against `maxActors`. An actor lives
    /// as long as the caller that spawned it is linked, so no client can keep a node's room for
    /// actors, or its memory, once it is gone.
    package func release(owner: Int) {
        let released = state.withLock { state -> [any DistributedActor] in
            let ids = state.owners.filter { $0.value == owner }.map(\.key)
            guard !ids.isEmpty else { return [] }
            let gone = Set(ids)
            for id in ids { state.owners.removeValue(forKey: id) }
            state.names = state.names.filter { entry in entry.value.map { !gone.contains($0.id) } ?? true }
            return ids.compactMap { state.spawned.removeValue(forKey: $0) }
        }
        // Let go outside the lock: an actor's deinit resigns its ID, which takes the lock.
        withExtendedLifetime(released) {}
    }

    // MARK: Finding

    /// The actor of `type` spawned with `name` on this system or on a linked node (asked in
    /// turn, by name, each within the call deadline; a node that cannot answer is passed
    /// over); nil when none of them has one.
    public func lookup<Act: DistributedActor>(_ type: Act.Type, named name: String) async throws -> Act?
    where Act.ActorSystem == ClusterActorSystem {
        guard let typeName = registry.name(of: type) else { throw ClusterActorSystemError.undeclaredType(String(describing: type)) }
        guard ActorSpawn.isName(name) else {
            throw ClusterActorSystemError.badValue("an actor's name is 1 to \(ActorSpawn.maxNameBytes) bytes of printable text")
        }
        if let id = lookupHere(name: name, type: typeName) { return try Act.resolve(id: id, using: self) }
        let timeout = min(Self.callOptions.timeout ?? callTimeout, callTimeout)
        let links = state.withLock { $0.links.values.sorted { $0.node < $1.node }.map { ($0.channel, $0.number) } }
        for (channel, _) in links {
            guard let id = try? await withTimeout(timeout, clock: clock, { try await channel.lookup(name: name, type: typeName) }) ?? nil,
                  state.withLock({ $0.links[id.system] != nil }) else { continue }
            return try Act.resolve(id: id, using: self)
        }
        return nil
    }

    /// The actor spawned here with `name` (and of the declared type `type`, when given).
    package func lookupHere(name: String, type: String? = nil) -> ClusterActorID? {
        state.withLock { state in
            guard case .some(.some(let named)) = state.names[name], type == nil || named.type == type else { return nil }
            return named.id
        }
    }
}

/// An actor spawned with a name: its ID and its declared type's name.
struct NamedActor {
    let id: ClusterActorID
    let type: String
}

/// What a factory threw when a spawn asked it for an actor: told to the caller as the
/// factory's own error (`threw` on the wire), never as a refusal of the spawn.
package struct ActorFactoryFailure: Error {
    package let error: any Error
}

/// Arguments of a spawn that did not decode into what the factory takes: the factory never ran.
struct SpawnArgumentsRefusal: Error {
    let reason: String
}
