import SkyNetRuntime

extension PeerLinks {
    /// What every link of a `PeerLinks` is started with, kept for members that join later.
    struct LinkContext: Sendable {
        let systems: Systems
        let settings: Settings
        let jobCheck: JobCheck
        let traffic: PeerTraffic
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
                await update(group: group, capacity: capacity, from: &members, to: Set(addresses))
            case .some(let result):
                if !reportedFailure {
                    let error = if case .failure(let error) = result { "\(error)" } else { "it resolves to no address" }
                    await context.log(.unreachable(group.name, address: "\(group.host):\(group.port)", error: error))
                }
                reportedFailure = true
            case nil:
                break
            }
            try? await DeadlineTimer.shared.sleep(for: refresh)
        }
    }

    /// Links the addresses new in `now`, takes back the leave of those that returned, and
    /// starts the leave of those gone.
    private func update(group: ClusterConfig.Node, capacity: Int, from members: inout Set<String>, to now: Set<String>) async {
        for address in now.subtracting(members).sorted() {
            let member = group.member(address: address)
            if links.cancelLeave(member.name) {
                await context.systems.setDraining(false, named: member.name)
            } else {
                await context.log(.discovered(member.name, group: group.name, host: group.host, address: address))
                startLink(member, capacity: capacity)
            }
        }
        for address in members.subtracting(now).sorted() {
            let member = group.member(address: address)
            guard links.beginLeave(member.name) else { continue }
            // Drained here, in the watcher's order, so that a return in a later round (which
            // un-drains) always comes after; only the wait for idle runs on its own.
            await context.systems.setDraining(true, named: member.name)
            await context.log(.draining(member.name, reason: "no longer an address of \(group.host)"))
            let context = context, links = links
            Task {
                await context.systems.idle(named: member.name)
                guard let link = links.completeLeave(member.name) else { return }
                await link.value
                await context.log(.disconnected(member.name, reason: "no longer an address of \(group.host)"))
            }
        }
        members = now
    }
}
