import SkyNetRuntime

/// Sweeps the nodes of this process (`Node.sweep`) from one task for every clock and tick they
/// keep time by: a process that hosts many nodes (the benchmark's hosts hold thousands) wakes
/// once a tick, not once a tick for each node. A group's task ends once its last node has
/// stopped or gone.
final class NodeSweeper: Sendable {
    static let shared = NodeSweeper()

    private struct Key: Hashable {
        let clock: ObjectIdentifier
        let tick: Duration
    }

    /// The nodes of one clock and tick, held weakly (a node dropped without `stop` is not kept
    /// alive by its sweeps), and the task that sweeps them.
    private struct Group {
        let id: UInt64
        let task: Task<Void, Never>
        var members: [ObjectIdentifier: WeakNode] = [:]
    }

    private struct WeakNode {
        weak var node: Node?
    }

    private struct State {
        var groups: [Key: Group] = [:]
        var lastID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Sweeps `node` every `tick` on its clock from now on, until `remove`.
    func add(_ node: Node, every tick: Duration) {
        let key = Key(clock: ObjectIdentifier(node.clock), tick: tick)
        let clock = node.clock
        state.withLock { state in
            if state.groups[key] == nil {
                state.lastID += 1
                let id = state.lastID
                state.groups[key] = Group(id: id, task: Task { await self.sweep(key, group: id, every: tick, on: clock) })
            }
            state.groups[key]?.members[ObjectIdentifier(node)] = WeakNode(node: node)
        }
    }

    /// Sweeps `node` no more; the last node of a group ends its task.
    func remove(_ node: Node, every tick: Duration) {
        let key = Key(clock: ObjectIdentifier(node.clock), tick: tick)
        let ended = state.withLock { state -> Task<Void, Never>? in
            state.groups[key]?.members[ObjectIdentifier(node)] = nil
            guard state.groups[key]?.members.isEmpty == true else { return nil }
            return state.groups.removeValue(forKey: key)?.task
        }
        ended?.cancel()
    }

    /// The group's loop: each tick, sweeps the nodes still there (forgetting those gone), until
    /// cancelled or its group is no longer the one of its key.
    private func sweep(_ key: Key, group id: UInt64, every tick: Duration, on clock: any TimerClock) async {
        while !Task.isCancelled {
            try? await clock.sleep(for: tick)
            let nodes = state.withLock { state -> [Node]? in
                guard var group = state.groups[key], group.id == id else { return nil }
                let nodes = group.members.values.compactMap(\.node)
                if nodes.count < group.members.count {
                    group.members = group.members.filter { $0.value.node != nil }
                    state.groups[key] = group.members.isEmpty ? nil : group
                }
                return nodes
            }
            guard let nodes, !nodes.isEmpty else { return }
            for node in nodes where !Task.isCancelled { node.sweep() }
        }
    }
}
