import SkyNetRuntime

/// The link tasks of a `PeerLinks`, by peer name, the leaves of address-group members and the
/// groups' watchers: one lock, so that nothing starts after `stop()` and a member's leave and
/// return cannot cross.
///
/// A link task returns whether it was still linked when it ended (cancelled by a leave, or by
/// `stop()`): only then does a leave say `disconnected` (a link that dropped said it already).
final class PeerLinkTable: Sendable {
    typealias Link = Task<Bool, Never>

    private struct State {
        var stopped = false
        var byName: [String: Link] = [:]
        /// Members draining before they leave, with the task that waits for them to be idle:
        /// their links stay until `completeLeave`.
        var leaving: [String: Task<Void, Never>] = [:]
        /// Links cancelled by a leave, awaited by a new link of the same name before it dials
        /// (the old one removes its system on the way out, and must not remove the new one's);
        /// dropped once they ended (`forgetRetired`).
        var retired: [String: Link] = [:]
        var watchers: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Starts `body` as the link of `name`, unless stopped or `name` has a link already.
    ///
    /// Links run below the scan that uses them (`skynet scan` runs it at `.high`): while the
    /// scan has tasks to hand to the peers already linked, the links still dialling wait for
    /// it. Ten thousand links at the scan's own priority kept its loop from starting until
    /// nearly all of them were up, and the slots of the first ones idle for a second.
    @discardableResult
    func start(_ name: String, _ body: @escaping @Sendable () async -> Bool) -> Bool {
        state.withLock { state in
            guard !state.stopped, state.byName[name] == nil else { return false }
            let previous = state.retired.removeValue(forKey: name)
            state.byName[name] = Task(priority: .medium) {
                _ = await previous?.value
                return await body()
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

    /// Marks `name` as leaving and starts `body`, its wait to be idle; false (and nothing
    /// started) when it has no link, is leaving already, or the table stopped.
    func beginLeave(_ name: String, _ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { state in
            guard !state.stopped, state.byName[name] != nil, state.leaving[name] == nil else { return false }
            state.leaving[name] = Task { await body() }
            return true
        }
    }

    /// Takes back the leave of `name`: true when it was still leaving (its link stays, to be
    /// un-drained; its wait is cancelled); false when it has left (a new link is due).
    func cancelLeave(_ name: String) -> Bool {
        let wait = state.withLock { $0.leaving.removeValue(forKey: name) }
        wait?.cancel()
        return wait != nil
    }

    /// Ends the leave of `name` if it was not taken back: its link is cancelled (outside the
    /// lock) and returned, to be awaited; nil when the member came back meanwhile.
    func completeLeave(_ name: String) -> Link? {
        let task = state.withLock { state -> Link? in
            guard state.leaving.removeValue(forKey: name) != nil, let task = state.byName.removeValue(forKey: name) else { return nil }
            state.retired[name] = task
            return task
        }
        task?.cancel()
        return task
    }

    /// Forgets the retired link of `name` once it ended, unless a new link took it already.
    func forgetRetired(_ name: String, ifStill link: Link) {
        state.withLock { state in
            if state.retired[name] == link { state.retired[name] = nil }
        }
    }

    /// Stops for good: no link, leave or watcher starts after this. Cancels the watchers and
    /// the leaves' waits, then every link; returns the links (by name) so that the caller may
    /// await some.
    func stop() -> [String: Link] {
        let (watchers, leaves, links) = state.withLock { state in
            state.stopped = true
            defer { state.leaving = [:] }
            return (state.watchers, Array(state.leaving.values), state.byName)
        }
        for watcher in watchers { watcher.cancel() }
        for leave in leaves { leave.cancel() }
        for link in links.values { link.cancel() }
        return links
    }
}
