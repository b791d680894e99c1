import SkyNetRuntime

/// The link tasks of a `PeerLinks`, by peer name, and the watchers of its address groups: one
/// lock, so that nothing starts after `stop()` and a member's leave and return cannot cross.
final class PeerLinkTable: Sendable {
    private struct State {
        var stopped = false
        var byName: [String: Task<Void, Never>] = [:]
        /// Members draining before they leave: their links stay until `completeLeave`.
        var leaving: Set<String> = []
        /// Links cancelled by a leave, awaited by a new link of the same name before it dials
        /// (the old one removes its system on the way out, and must not remove the new one's).
        var retired: [String: Task<Void, Never>] = [:]
        var watchers: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Starts `body` as the link of `name`, unless stopped or `name` has a link already.
    @discardableResult
    func start(_ name: String, _ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { state in
            guard !state.stopped, state.byName[name] == nil else { return false }
            let previous = state.retired.removeValue(forKey: name)
            state.byName[name] = Task {
                await previous?.value
                await body()
            }
            return true
        }
    }

    /// Starts `body` as a group's watcher, unless stopped.
    func watch(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.stopped else { return }
            state.watchers.append(Task { await body() })
        }
    }

    /// Marks `name` as leaving; false when it has no link (nothing to drain).
    func beginLeave(_ name: String) -> Bool {
        state.withLock { state in
            guard state.byName[name] != nil else { return false }
            state.leaving.insert(name)
            return true
        }
    }

    /// Takes back the leave of `name`: true when it was still leaving (its link stays, to be
    /// un-drained); false when it has left (a new link is due).
    func cancelLeave(_ name: String) -> Bool {
        state.withLock { $0.leaving.remove(name) != nil }
    }

    /// Ends the leave of `name` if it was not taken back: its link is cancelled (outside the
    /// lock) and returned, to be awaited; nil when the member came back meanwhile.
    func completeLeave(_ name: String) -> Task<Void, Never>? {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard state.leaving.remove(name) != nil, let task = state.byName.removeValue(forKey: name) else { return nil }
            state.retired[name] = task
            return task
        }
        task?.cancel()
        return task
    }

    /// Stops for good: no link or watcher starts after this. Cancels the watchers, then every
    /// link; returns the links (by name) so that the caller may await some.
    func stop() -> [String: Task<Void, Never>] {
        let (watchers, links) = state.withLock { state in
            state.stopped = true
            return (state.watchers, state.byName)
        }
        for watcher in watchers { watcher.cancel() }
        for link in links.values { link.cancel() }
        return links
    }
}
