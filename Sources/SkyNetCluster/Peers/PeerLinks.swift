import SkyNetActors
import SkyNetLink
import SkyNetRuntime
import SkyNetSSH
import SkyNetScheduler
import SkyNetTransfer
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// Keeps a connection to every peer of a cluster file and keeps `Systems` in step with them.
///
/// Each peer has a task of its own that connects and says hello in the background, adds the
/// peer to the registry when it is welcomed, removes it when it disconnects, and tries again
/// with backoff: a peer that is down is reported once, and joins when it comes up. At most 256
/// start dialling at once, and the links' tasks run at `.medium`: a scan run above that
/// (`skynet scan` runs its own at `.high`) uses the peers already linked before more links
/// are set up.
///
/// A peer that refuses the hello for good (`unauthorized`, `unsupported-version`) is reported
/// once with the fix and asked again only rarely (`refusalRetryDelay`): the answer cannot
/// change until someone restarts that node or this coordinator, and a loop of refused hellos
/// would only fill the node's log. A peer whose welcome lacks the scan's job, or runs it as a
/// different command (other words, not just other quoting), is treated the same way, unless
/// the settings allow a mismatch: then it is warned about once and used.
///
/// A node with an ssh login is dialled by logging in and running `skynet node --stdio` there
/// (`SSHDialer`): it is never sent the token, it is redialled with a slower backoff (each try
/// is a login), a failure is reported once in ssh's own words with the fix, and a host that
/// cannot change its answer soon (a refused login, no skynet) is asked again only rarely.
public final class PeerLinks: Sendable {
    /// How the links reach and use their peers.
    public struct Settings: Sendable {
        /// Slots per peer unless the cluster file says otherwise.
        public var capacity: Int
        /// Bound of each remote request, and of connecting.
        public var timeout: Duration
        /// The cluster token the nodes were started with; nil: links without authentication
        /// (loopback only).
        public var token: String?
        /// Backoff between attempts to reach a peer that is down.
        package var retryDelays = Backoff(first: .milliseconds(100), most: .seconds(2))
        /// Wait before asking again a peer that refused the hello for good or lacks the job.
        package var refusalRetryDelay: Duration = .seconds(30)
        /// The job the scan runs: a peer whose welcome does not list it is not used.
        package var job: String
        /// The coordinator's own summary of `job` (its command), to compare the peers' with;
        /// nil when the coordinator does not declare it (then the first peer's is compared with).
        package var jobSummary: String?
        /// Use a peer that runs the job as another command, after a warning, instead of
        /// leaving it out (`--allow-job-mismatch`).
        package var allowJobMismatch: Bool
        /// The distributed actor system whose calls the links carry: a peer whose welcome offers
        /// actors is connected to it while linked, unless it declares other types (`actorsDiffer`).
        package var actors: ClusterActorSystem?
        /// How ssh nodes of the cluster are reached (their own backoff, no token).
        package var ssh = SSHSettings()
        /// The scan's files: when active, only peers that offer files are used, each
        /// gets the basefiles before its first task, and tasks travel as `transfer` requests.
        package var transfer: TransferSpec?
        /// Where the peers' tasks record their returned files (the journal takes them).
        package var returnRecords = ReturnRecords()
        /// Where returned files are written and inputs read (nil: the working directory and `/`).
        package var returnRoots: ReturnRoots?
        /// How an address group's host becomes addresses (tests give their own answers).
        package var resolve: ClusterConfig.Resolver = ClusterConfig.systemResolver
        /// What the links' waits (between dials, between an address group's lookups) are timed by.
        package var clock: any TimerClock

        /// Settings for a scan of `job` (by default the built-in scan) over peers of `capacity`
        /// slots each.
        public init(capacity: Int = 4, timeout: Duration = .seconds(5), token: String? = nil,
                    job: String = JobRegistry.scan, jobSummary: String? = nil, allowJobMismatch: Bool = false) {
            self.capacity = capacity
            self.timeout = timeout
            self.token = token
            self.job = job
            self.jobSummary = jobSummary
            self.allowJobMismatch = allowJobMismatch
            clock = DeadlineTimer.shared
        }
    }

    /// Every link task by peer name, and the address groups' watchers.
    let links = PeerLinkTable()
    /// The names of the ssh nodes: `stop()` waits (a little) for their `ssh` processes to end.
    private let sshNames: Set<String>
    /// What every link is started with (`startLink`).
    let context: LinkContext
    /// The reports under way: `stop()` closes it and waits for those, since a report may
    /// suspend on a full output after it passed the check.
    private let reporting = InFlight()
    /// The peers whose last answer was a refusal for good or a welcome without the job (or
    /// with another command for it), by name.
    private let refusing = Locked<Set<String>>([])
    /// Fulfilled (with the reasons, one line) once every peer of the cluster has refused the
    /// hello for good or lacks the job: a scan with no local slots then has nothing that can run it.
    package let everyPeerRefused = AsyncSignal<String>()
    /// Fulfilled once every ssh node of the cluster failed its first dial and none ever
    /// connected; the value lists them: `gpu1 (ssh: Permission denied (publickey)), gpu2 (…)`.
    package let everySSHHostFailed = AsyncSignal<String>()
    /// The connections of the linked peers, and the bytes of those that closed: what
    /// `traffic` sums (`PeerLinks+Traffic.swift`).
    let peerTraffic = PeerTraffic()

    /// Starts linking to every node of `cluster`.
    public init(cluster: ClusterConfig, systems: Systems, settings: Settings, log: @escaping @Sendable (ClusterEvent) async -> Void) {
        let reporting = self.reporting, refusing = self.refusing, everyPeerRefused = self.everyPeerRefused, traffic = peerTraffic
        let sshHosts = SSHHostFailures(hosts: cluster.nodes.filter { $0.ssh != nil }.map(\.name), signal: everySSHHostFailed)
        let count = cluster.nodes.count
        // A group can bring new members at any time: its refusals never mean "every peer".
        let groups = cluster.hasAddressGroups
        let log: @Sendable (ClusterEvent) async -> Void = { event in
            var refused = false
            switch event {
            case .refused, .unauthorized, .lacksJob, .jobDiffers(_, _, _, _, used: false), .actorsDiffer:
                refused = true
                _ = refusing.withLock { $0.insert(event.peer) }
            case .connected:
                _ = refusing.withLock { $0.remove(event.peer) }
            default:
                break
            }
            if reporting.begin() {
                await log(event)
                reporting.end()
            }
            sshHosts.record(event)
            // After the report, so whoever stops the scan on this signal sees the refusal printed;
            // decided and done in one step, so a peer that connected meanwhile counts.
            guard refused, !groups else { return }
            refusing.withLock { refusing in
                if refusing.count == count { everyPeerRefused.fulfil(event.everyPeerUnusable) }
            }
        }
        let jobCheck = JobCheck(job: settings.job, expected: settings.jobSummary, allowsMismatch: settings.allowJobMismatch)
        context = LinkContext(systems: systems, settings: settings, jobCheck: jobCheck, traffic: traffic,
                              dials: DialGate(clock: settings.clock), log: log)
        sshNames = Set(cluster.nodes.filter { $0.ssh != nil }.map(\.name))
        for node in cluster.nodes {
            // An ssh node's own slots are its login's N/ or its cores, as its welcome says.
            let capacity = node.ssh == nil ? node.capacity ?? cluster.capacity ?? settings.capacity
                                           : node.capacity ?? ClusterConfig.maxCapacity
            if node.everyAddress {
                watch(group: node, capacity: capacity)
            } else {
                startLink(node, capacity: capacity)
            }
        }
    }

    /// Starts the link to `node` (unless stopped, or it has one).
    @discardableResult
    func startLink(_ node: ClusterConfig.Node, capacity: Int) -> Bool {
        let context = context
        return links.start(node.name) {
            await PeerLink(node: node, capacity: capacity, context: context).run()
        }
    }

    /// Stops every link: open connections close, and no link reports anything after this
    /// returns (a report already under way is awaited). A connect in progress ends on its own
    /// (within the timeout), unawaited. The `ssh` processes of ssh links are awaited for up to
    /// `sshGrace` (each closes its channel, so the host's node exits, then ssh does).
    public func stop(sshGrace: Duration = .seconds(3)) async {
        let tasks = links.stop()
        reporting.close()
        await reporting.waitUntilNone()
        let sshTasks = tasks.filter { sshNames.contains($0.key) }.map(\.value)
        guard !sshTasks.isEmpty else { return }
        _ = try? await withTimeout(sshGrace) { for task in sshTasks { _ = await task.value } }
    }

    /// The event of a hello that `peer` refused for good (it will be refused again, whatever
    /// the timing), or of a peer that could not prove the token; nil for any other failure.
    static func refusal(by peer: String, _ error: any Error) -> ClusterEvent? {
        if let refusal = error as? WireError, refusal.code == .unauthorized || refusal.code == .unsupportedVersion {
            return .refused(peer, code: refusal.code, message: refusal.message ?? "")
        }
        return (error as? PeerUnauthenticated).map { ClusterEvent.unauthorized(peer, reason: $0.reason) }
    }
}

extension PeerLinks {
    /// Waits until `peer`'s link closes (closing it when the caller is cancelled). When the
    /// node says it drains first, its system gets no new work from then on and the drain is
    /// reported; the link stays until the node closes it (its running tasks may finish).
    static func awaitClose(of peer: PeerConnection, named name: String, systems: Systems,
                           log: @escaping @Sendable (ClusterEvent) async -> Void) async -> Connection.CloseReason {
        // Whichever comes first: the drain's timeout, or nil for a link that closed.
        let first = AsyncSignal<Double?>()
        peer.draining.whenFulfilled { first.fulfil($0) }
        peer.closed.whenFulfilled { _ in first.fulfil(nil) }
        let timeout = await withTaskCancellationHandler { await first.value } onCancel: { peer.close() }
        if let timeout, !Task.isCancelled {
            await systems.setDraining(true, named: name)
            await log(.draining(name, reason: "it is stopping; its running tasks may finish within \(timeout.asWritten) s"))
        }
        return await withTaskCancellationHandler { await peer.closed.value } onCancel: { peer.close() }
    }
}
