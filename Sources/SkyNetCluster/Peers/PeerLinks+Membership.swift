import SkyNetRuntime
import SkyNetScheduler

extension PeerLinks {
    /// What every link of a `PeerLinks` is started with, kept for members that join later.
    struct LinkContext: Sendable {
        let systems: Systems
        let settings: Settings
        let jobCheck: JobCheck
        let traffic: PeerTraffic
        let dials: DialGate
        let log: @Sendable (ClusterEvent) async -> Void
    }

    /// Starts the watcher of an address group: its host is resolved now and every `refresh`
    /// seconds; each new address joins as the peer `GROUP/ADDRESS`, each one that went away is
    /// drained, then unlinked once idle. An error or an empty answer changes nothing (a DNS
    /// outage, or a reader catching a hosts file half-written, must not drain a cluster).
    func watch(group: ClusterConfig.Node, capacity: Int) {
        links.watch { [self] in await watchLoop(group: group, capacity: capacity) }
    }

    private func watchLoop(group: ClusterConfig.Node, capacity: Int) async {
        let refresh = Duration.seconds(group.refreshInterval)
        // A lookup may hang (a dead DNS server): it keeps its one thread, and rounds are
        // skipped until it returns, so there is at most one per group.
        let bound = max(refresh, .seconds(5))
        let resolve = context.settings.resolve
        var lookup: Task<[String], any Error>?
        var members: Set<String> = []
        var reportedFailure = false
        var reportedTooMany = false
        while !Task.isCancelled {
            let running = lookup ?? Task { try await resolve(group.host, group.port) }
            lookup = running
            let answer: Result<[String], any Error>?
            do {
                answer = .success(try await withTimeout(bound) { try await running.value })
            } catch is TimeoutError {
                answer = nil  // still under way: asked again next round
            } catch {
                answer = .failure(error)
            }
            if Task.isCancelled { return }
            if answer != nil { lookup = nil }
            switch answer {
            case .success(let addresses) where !addresses.isEmpty:
                reportedFailure = false
                let used = ClusterConfig.groupMembers(of: addresses)
                let found = Set(addresses).count
                if found > used.count, !reportedTooMany {
                    await context.log(.tooManyAddresses(group.name, host: group.host, found: found, used: used.count))
                }
                reportedTooMany = found > used.count
                await update(group: group, capacity: capacity, from: &members, to: Set(used))
            case .some(let result):
                if !reportedFailure {
                    let error = if case .failure(let error) = result { "\(error)" } else { "it resolves to no address" }
                    await context.log(.unreachable(group.name, address: "\(group.host):\(group.port)", error: error))
                }
                reportedFailure = true
            case nil:
                break
            }
            try? await context.settings.clock.sleep(for: refresh)
        }
    }

    /// Links the addresses new in `now`, takes back the leave of those that returned, and
    /// starts the leave of those gone.
    private func update(group: ClusterConfig.Node, capacity: Int, from members: inout Set<String>, to now: Set<String>) async {
        let systems = context.systems, log = context.log
        for address in now.subtracting(members).sorted() {
            let member = group.member(address: address)
            if links.cancelLeave(member.name) {
                if await systems.setLeaving(false, named: member.name) {
                    await log(.returned(member.name, reason: "an address of \(group.host) again"))
                }
            } else {
                await systems.setLeaving(false, named: member.name)  // a mark its last leave may have left
                await log(.discovered(member.name, group: group.name, host: group.host, address: address))
                startLink(member, capacity: capacity)
            }
        }
        let reason = "no longer an address of \(group.host)"
        for address in members.subtracting(now).sorted() {
            let name = group.member(address: address).name
            // Marked here, in the watcher's order, so that a return in a later round (which
            // takes the mark back) always comes after, and before the wait for idle starts, so
            // that no task is sent to it meanwhile; only that wait runs on its own.
            let shown = await systems.setLeaving(true, named: name)
            let links = links
            let started = links.beginLeave(name) {
                await systems.idle(named: name)
                guard let link = links.completeLeave(name) else { return }
                // Said only for a link that was up when it ended: one that dropped said so.
                if await link.value { await log(.disconnected(name, reason: reason)) }
                await systems.forgetLeaving(named: name)
                links.forgetRetired(name, ifStill: link)
            }
            if !started {
                await systems.setLeaving(false, named: name)  // the links have stopped
            } else if shown {
                await log(.draining(name, reason: reason))  // a member down, or draining on its own, is not
            }
        }
        members = now
    }
}
