import SkyNetActors
import SkyNetLink
import SkyNetRuntime
import SkyNetSSH
import SkyNetScheduler
import SkyNetWire
import SkyNetWork

/// The link to one peer, as a state machine: it dials, admits what answered (the job, files),
/// serves tasks until the connection closes, and waits before dialling again, until cancelled.
/// Each step is a method that returns the next state; what must outlive a step (what was
/// already reported, failures in a row, a copy just shipped) is in `Memory`.
struct PeerLink {
    enum State {
        /// Dial the peer now.
        case dialing
        /// Wait this long, then dial.
        case waiting(Duration)
        /// Welcomed: check that it can take the scan's work.
        case admitting(PeerConnection)
        /// In `systems`, taking tasks, until the connection closes.
        case serving(PeerConnection)
        /// Cancelled; `linked`: the peer was in `systems` when it was (a leave says
        /// `disconnected` for it).
        case stopped(linked: Bool)
    }

    /// What the link remembers from one step to the next: each trouble is reported once until
    /// it clears, and failures in a row lengthen the wait (`backoff`).
    struct Memory {
        var failures = 0
        var reportedDown = false
        var reportedRefusal = false
        var reportedShippingAgain = false
        /// The dial before this one shipped the binary (`--ship`): a second mismatch is an error.
        var justShipped = false
    }

    let node: ClusterConfig.Node
    let capacity: Int
    let context: PeerLinks.LinkContext
    let dialer: any PeerDialer
    let backoff: Backoff

    init(node: ClusterConfig.Node, capacity: Int, context: PeerLinks.LinkContext) {
        self.node = node
        self.capacity = capacity
        self.context = context
        dialer = PeerLinks.dialer(for: node, settings: context.settings)
        backoff = node.ssh == nil ? context.settings.retryDelays : context.settings.ssh.retryDelays
    }

    private var settings: PeerLinks.Settings { context.settings }
    private func log(_ event: ClusterEvent) async { await context.log(event) }

    /// Runs the link until cancelled; returns whether the peer was linked then.
    func run() async -> Bool {
        var memory = Memory()
        var state = State.dialing
        while true {
            switch state {
            case .dialing:
                state = Task.isCancelled ? .stopped(linked: false) : await dial(&memory)
            case .waiting(let delay):
                try? await settings.clock.sleep(for: delay)
                state = .dialing
            case .admitting(let peer):
                state = await admit(peer, &memory)
            case .serving(let peer):
                state = await serve(peer, &memory)
            case .stopped(let linked):
                return linked
            }
        }
    }

    /// The wait after one more failure in a row.
    private func retry(_ memory: inout Memory) -> State {
        memory.failures += 1
        return .waiting(backoff.delay(after: memory.failures))
    }

    /// Dials and says hello: welcomed, or what to do after the failure (reported once).
    private func dial(_ memory: inout Memory) async -> State {
        let peer: PeerConnection
        guard let place = await context.dials.enter() else { return .stopped(linked: false) }
        do {
            defer { place.leave() }  // answered, welcomed or not: the next dial may start
            peer = try await PeerConnection.open(name: node.name, dialer: dialer, token: dialer.sendsToken ? settings.token : nil,
                                                 timeout: settings.timeout, actors: settings.actors?.name)
        } catch {
            if Task.isCancelled { return .stopped(linked: false) }
            return await failedDial(error, &memory)
        }
        memory.reportedDown = false
        memory.justShipped = false
        return .admitting(peer)
    }

    private func failedDial(_ error: any Error, _ memory: inout Memory) async -> State {
        if !memory.reportedShippingAgain, let event = PeerLinks.shippingAgain(node.name, after: error, justShipped: memory.justShipped) {
            await log(event)
            memory.reportedShippingAgain = true
        }
        guard let error = await PeerLinks.shipIfNeeded(after: error, by: dialer, again: memory.justShipped, timeout: settings.timeout) else {
            memory.justShipped = true
            return .dialing  // the copy is there now: dial again at once
        }
        memory.justShipped = false
        if let failure = error as? SSHFailure, let login = node.ssh {
            if !memory.reportedDown {
                await log(.sshUnreachable(node.name, login: "\(login)", reason: failure.reason, fix: failure.fix))
            }
            memory.reportedDown = true
            return failure.isPermanent ? .waiting(settings.refusalRetryDelay) : retry(&memory)
        }
        if let refusal = PeerLinks.refusal(by: node.name, error) {
            if !memory.reportedRefusal { await log(refusal) }
            memory.reportedRefusal = true
            return .waiting(settings.refusalRetryDelay)
        }
        // An ssh node is reported in the ssh form whatever failed (ssh not found, …).
        let event: ClusterEvent = node.ssh.map {
            .sshUnreachable(node.name, login: "\($0)", reason: "\(error)",
                            fix: "check the login with: \(settings.ssh.command.checkHint(for: $0))")
        } ?? .unreachable(node.name, address: dialer.address, error: "\(error)")
        if !memory.reportedDown { await log(event) }
        memory.reportedDown = true
        return retry(&memory)
    }

    /// Whether a welcomed peer can take the scan's work: it runs the job (as the scan runs it,
    /// unless a mismatch is allowed) and, when files travel, takes them and has the basefiles.
    private func admit(_ peer: PeerConnection, _ memory: inout Memory) async -> State {
        switch context.jobCheck.check(peer.welcome, of: node.name) {
        case .unusable(let event):
            return await refused(peer, event, &memory)
        case .differs(let event):
            await log(event)
        case .usable:
            break
        }
        // A program's own system uses only nodes of the same program (the same actor types);
        // one that offers its own system's name would route its actors' calls to itself.
        if let actors = settings.actors, peer.welcome.actors?.build != actors.registry.build || peer.welcome.actors?.system == actors.name {
            return await refused(peer, .actorsDiffer(node.name, build: peer.welcome.actors?.build ?? "", expected: actors.registry.build), &memory)
        }
        let filesRefusal: ClusterEvent?
        do {
            filesRefusal = try await PeerLinks.readyForFiles(peer, named: node.name, settings: settings)
        } catch {
            peer.close()
            if Task.isCancelled {
                await peer.finish()
                return .stopped(linked: false)
            }
            await log(.disconnected(node.name, reason: await PeerLinks.lastWords(of: peer, peer.closed.value)))
            return retry(&memory)
        }
        if let filesRefusal { return await refused(peer, filesRefusal, &memory) }
        memory.reportedRefusal = false
        return .serving(peer)
    }

    /// A peer that cannot take this scan's work: closed, reported once, asked again rarely.
    private func refused(_ peer: PeerConnection, _ event: ClusterEvent, _ memory: inout Memory) async -> State {
        peer.close()
        if !memory.reportedRefusal { await log(event) }
        memory.reportedRefusal = true
        return .waiting(settings.refusalRetryDelay)
    }

    /// Adds the peer to `systems` and serves tasks until its connection closes.
    private func serve(_ peer: PeerConnection, _ memory: inout Memory) async -> State {
        let systems = context.systems, name = node.name, log = context.log
        let slots = min(capacity, peer.welcome.capacity)
        let transfer = settings.transfer.map { TransferContext(spec: $0, records: settings.returnRecords, roots: settings.returnRoots) }
        // Tasks wait in line at the node only when they are the built-in scan's (short and
        // bounded: a slot's next one waits for one task at most) and this scan may use all the
        // node's slots (a smaller capacity here caps what runs there); at most one a slot, and
        // never more in flight than a node takes on one connection.
        let waits = settings.job == JobRegistry.scan && transfer == nil && slots == peer.welcome.capacity
        let queue = waits ? max(0, min(peer.welcome.queue, slots, Request.maxInFlightPerConnection - slots)) : 0
        let remote = RemoteSystem(name: name, peer: peer, timeout: settings.timeout, transfer: transfer,
                                  waitsInLine: queue > 0) { responsive in
            await systems.setSuspended(!responsive, named: name)
            await log(responsive ? .responsive(name) : .unresponsive(name))
        }
        await systems.add(remote, capacity: slots, queue: queue, draining: peer.isDraining)
        let actorLink = peer.welcome.actors.flatMap { offer in
            settings.actors.map { actors in
                peer.serveCalls(of: actors)
                return (offer.system, actors.connect(to: offer.system, node: name, through: peer))
            }
        }
        context.traffic.linked(peer, named: name)
        await log(.connected(name, link: peer.protection(over: dialer)))
        let linked = ContinuousClock.now
        let reason = await PeerLinks.awaitClose(of: peer, named: name, systems: systems, log: log)
        await systems.remove(named: name)
        if let (system, number) = actorLink { settings.actors?.disconnect(from: system, link: number, nodeLost: !Task.isCancelled) }
        context.traffic.unlinked(named: name)
        if Task.isCancelled {
            await peer.finish()
            return .stopped(linked: true)
        }
        await log(.disconnected(name, reason: await PeerLinks.lastWords(of: peer, reason)))
        // A peer that welcomes and then drops the link at once (crashing, or full) would
        // otherwise be redialled in a hot loop: only a link that lasted resets the backoff.
        if ContinuousClock.now - linked >= backoff.most {
            memory.failures = 0
            return .dialing
        }
        return retry(&memory)
    }
}
