import Distributed
import SkyNetRuntime
import SkyNetWire

/// What becomes of a spawned actor when the link to its node ends.
public enum RestartPolicy: Sendable, Hashable {
    /// It is gone for this system: its calls fail (`noRoute`), its `whenTerminated` actions run.
    case never
    /// It is made again from its factory and spawn arguments on another linked node (the least
    /// loaded), and its references go on working: their calls go to the new one (those in
    /// flight when the link ended failed, as `linkLost`). Its state starts anew. The node's
    /// link ending counts as the node's death: should that node still run, its copy is no
    /// longer called by this system.
    case onNodeLoss
}

/// How to make a restartable actor again, and the actor its references reach now.
struct Restartable {
    let request: ActorSpawn
    var current: ClusterActorID
}

/// The actors a lost link took: those to make again, and the watchers of those gone.
struct LostActors {
    var restart: [(ClusterActorID, ActorSpawn, AsyncSignal<Void>)] = []
    var terminated: [(ClusterActorID, [@Sendable (ClusterActorID) -> Void])] = []
}

extension ClusterActorSystem {
    /// Runs `action` once when the actor with `id` is gone for this system: the link to its
    /// node ended and it is not made again (no restart policy, or no node left to make it on),
    /// or, for an actor hosted here, it was deinitialized. At once when it is already gone.
    public func whenTerminated(_ id: ClusterActorID, perform action: @escaping @Sendable (ClusterActorID) -> Void) {
        let gone = state.withLock { state -> Bool in
            let current = state.restartable[id]?.current ?? id
            let alive = current.system == name ? state.actors[current] != nil
                                               : state.links[current.system] != nil || state.restarting[id] != nil
            if alive { state.watchers[id, default: []].append(action) }
            return !alive
        }
        if gone { action(id) }
    }

    /// The actor calls to `id` reach now (another after a restart), once any restart under
    /// way has ended (within `deadline`).
    func route(_ id: ClusterActorID, until deadline: ContinuousClock.Instant) async throws -> ClusterActorID {
        if let restart = state.withLock({ $0.restarting[id] }) {
            try await withTimeout(max(.zero, deadline - clock.now), clock: clock) { await restart.value }
        }
        return state.withLock { $0.restartable[id]?.current ?? id }
    }

    /// Remembers how to make the actor `id` again, when it was spawned to be restarted.
    func remember(_ id: ClusterActorID, _ request: ActorSpawn, restart: RestartPolicy) {
        guard restart == .onNodeLoss else { return }
        state.withLock { $0.restartable[id] = Restartable(request: request, current: id) }
    }

    /// Takes out of `state` what the loss of `system` means for the actors this system
    /// follows there: restarts to make, watchers to tell.
    static func loseActors(of system: String, _ state: inout State) -> LostActors {
        var lost = LostActors()
        for (id, restartable) in state.restartable where restartable.current.system == system {
            let signal = AsyncSignal<Void>()
            state.restarting[id] = signal
            lost.restart.append((id, restartable.request, signal))
        }
        for (id, watchers) in state.watchers where (state.restartable[id]?.current ?? id).system == system && state.restartable[id] == nil {
            lost.terminated.append((id, watchers))
            state.watchers.removeValue(forKey: id)
        }
        return lost
    }

    /// Tells the watchers of the actors gone, and makes the restartable ones again.
    func handle(_ lost: LostActors) {
        for (id, watchers) in lost.terminated {
            for watcher in watchers { watcher(id) }
        }
        for (id, request, signal) in lost.restart {
            Task { await self.restart(id, request, signal) }
        }
    }

    /// Makes the actor `id` again on the least loaded node; when none can take it, it is
    /// terminated. Its waiting calls go on either way.
    private func restart(_ id: ClusterActorID, _ request: ActorSpawn, _ signal: AsyncSignal<Void>) async {
        var made: ClusterActorID?
        if let system = try? place(.leastLoaded) {
            made = try? await spawn(request, on: system)
            if made == nil { state.withLock { $0.placed[system, default: 1] -= 1 } }
        }
        let watchers = state.withLock { state -> [@Sendable (ClusterActorID) -> Void] in
            state.restarting.removeValue(forKey: id)
            guard let made else {
                state.restartable.removeValue(forKey: id)
                return state.watchers.removeValue(forKey: id) ?? []
            }
            state.restartable.changeValue(forKey: id) { $0.current = made }
            return []
        }
        signal.fulfil(())
        for watcher in watchers { watcher(id) }
    }
}
