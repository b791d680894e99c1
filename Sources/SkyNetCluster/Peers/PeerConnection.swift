import SkyNetAuth
import SkyNetLink
import SkyNetRuntime
import SkyNetScheduler
import SkyNetTransfer
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// A peer that went away while requests to it were pending.
package struct PeerDisconnected: SystemFailure, CustomStringConvertible {
    package let peer: String
    package let reason: String
    package var systemIsGone: Bool { true }
    package var taskWasGivenBack: Bool { false }
    package var description: String { "\(peer) disconnected (\(reason))" }
}

/// A client's connection to a node: handshake, then requests matched to replies by id.
///
/// Replies are matched on the connection's reader thread, which resumes the waiting request
/// at once; when the connection ends, every pending request fails at once. The pending table
/// is guarded by a lock (`Locked`).
package final class PeerConnection: Sendable {
    package struct Welcome: Sendable {
        package let name: String
        package let capacity: Int
        /// How many scans that may wait the node holds in line for a slot (0: none).
        package let queue: Int
        /// The jobs the node runs, each with its summary (its command, or a label). A v1 node
        /// does not say: it runs the built-in scan only.
        package let jobs: [String: String]
        /// The node's idle bound in seconds, when it says (it closes a silent client then).
        package let idleSeconds: Double?
        /// What the node offers for files; nil: it takes none (an older node, or
        /// one started with `--no-files`), and is never sent a file request.
        package let files: FileSupport?
        /// The system of the distributed actors the node hosts; nil: it hosts none.
        package let actors: ActorOffer?

        package init(name: String, capacity: Int, queue: Int = 0, jobs: [String: String]?, idleSeconds: Double? = nil,
                     files: FileSupport? = nil, actors: ActorOffer? = nil) {
            self.name = name
            self.capacity = capacity
            self.queue = queue
            self.jobs = jobs ?? [JobRegistry.scan: "built-in simulated scan"]
            self.idleSeconds = idleSeconds
            self.files = files
            self.actors = actors
        }
    }

    struct Pending {
        let waiter: Waiter
        /// A scan or a job (not a ping): failed when the peer stops answering pings.
        let isWork: Bool
        /// Sent with a liveness bound: keeps the ping loop running while pending.
        let isWatched: Bool
        /// The request's time limit on the link's clock, if it has one.
        var deadline: TimerTicket?
        /// The task that sends the request once the queue to the node has room, if it waits
        /// for some: cancelled when the request ends.
        var sender: Task<Void, Never>?
    }

    /// Who gets a request's reply: the task that waits for it (`request`), or a callback
    /// (`send(id:line:isWork:timeout:liveness:done:)`, for the requests no task waits for).
    enum Waiter {
        case task(CheckedContinuation<Reply, any Error>)
        case callback(@Sendable (Result<Reply, any Error>) -> Void)

        func resume(with result: Result<Reply, any Error>) {
            switch self {
            case .task(let continuation): continuation.resume(with: result)
            case .callback(let done): done(result)
            }
        }
    }

    struct State {
        var lastID = 0
        var pending: [Int: Pending] = [:]
        /// Why the connection ended, once it has.
        var ended: Connection.CloseReason?
        /// When a line was last sent: the keep-alive pings only a link idle for its interval.
        var lastSent = ContinuousClock.now
        /// The keep-alive's next look, on `clock`, and which look that is: a look that comes
        /// at once may store its successor's ticket before its own is stored.
        var keepAlive: TimerTicket?
        var keepAliveTurn = 0
        /// The liveness ping loop, while one runs (at most one per link): made under this lock
        /// by the request that finds none, cleared under it by the loop when no watched request
        /// is pending, so it changes with `pending`.
        var liveness: Task<Void, Never>?
        /// How long a ping may go unanswered: the bound of the latest watched request.
        var livenessBound: Duration = .seconds(5)
        /// Where the returned files' lines of a pending transfer go, by request id.
        var streams: [Int: any ReplyStream] = [:]
        /// The link's file pump, once a file was sent (made on first use).
        var pump: FilePump?
    }

    package let name: String
    package let welcome: Welcome
    let connection: Connection
    /// The calls the node makes of our actors over this link (`PeerConnection+Actors.swift`).
    let callsFromNode = Locked(CallsFromNode())
    let state: Locked<State>
    /// What keeps the link's time: request time limits, keep-alive and liveness pings.
    let clock: any TimerClock
    /// The dialed link's `explain` and `finish`, set once the link is open.
    private let dialed = Locked<DialedLink?>(nil)

    /// How often an idle link is pinged by default: well under a node's idle bound (60 s), so a
    /// healthy coordinator that has nothing to send is never dropped.
    package static let defaultKeepAliveInterval: Duration = .seconds(15)

    /// Connects to `host:port` and says hello: `open(name:dialer:…)` over TCP.
    package static func open(name: String, host: String, port: Int, token: String?, timeout: Duration,
                            keepAliveInterval: Duration = defaultKeepAliveInterval,
                            clock: any TimerClock = DeadlineTimer.shared) async throws -> PeerConnection {
        try await open(name: name, dialer: TCPDialer(host: host, port: port), token: token, timeout: timeout,
                       keepAliveInterval: keepAliveInterval, clock: clock)
    }

    /// Dials the node and says hello; throws when the peer is down, refuses the hello
    /// or does not answer within the dialer's bound. With a `token`, the peer must prove it knows it
    /// (else `PeerUnauthenticated`), the token itself never goes over the wire, and every
    /// later message in both directions is encrypted. Once open, the link is pinged whenever nothing
    /// has been sent on it for `keepAliveInterval`. Every time limit and ping is kept on `clock`.
    /// An error is the one the dialer explains it as (over ssh: what ssh said).
    package static func open(name: String, dialer: any PeerDialer, token: String?, timeout: Duration,
                            keepAliveInterval: Duration = defaultKeepAliveInterval,
                            clock: any TimerClock = DeadlineTimer.shared, actors: String? = nil) async throws -> PeerConnection {
        let link = try await dialer.dial(timeout: timeout)
        let connection = link.connection
        let handshake: Handshake
        do {
            handshake = try Handshake(name: name, connection: connection, key: token.map { LinkKey(token: Array($0.utf8)) },
                                      clock: clock, actors: actors)
        } catch {
            connection.close()
            throw error
        }
        connection.start(onEvent: handshake.deliver, onClose: handshake.fail)
        // The welcome's bound is a timer that ends the handshake, not a task that waits: ten
        // thousand links dialled at once start no task for it.
        let bound = clock.schedule(after: link.welcomeBound) { handshake.timedOut() }
        defer { clock.cancel(bound) }
        do {
            try connection.send(handshake.hello + [0x0A])
            let peer = try await withTaskCancellationHandler {
                try await handshake.welcomed.value.get()
            } onCancel: {
                connection.close()
            }
            if Task.isCancelled { throw CancellationError() }
            peer.dialed.withLock { $0 = link }
            link.welcomed()
            // A node that names its idle bound is pinged at a third of it, if that is sooner.
            let bound = peer.welcome.idleSeconds.map { Duration.seconds($0 / 3) } ?? keepAliveInterval
            peer.startKeepAlive(every: min(keepAliveInterval, max(bound, .milliseconds(100))))
            return peer
        } catch {
            connection.close()
            throw await link.explain(Task.isCancelled ? CancellationError() : error)
        }
    }

    /// Why the link ended, as its dialer explains `error` (over ssh: ssh's last words, such as
    /// `ssh: Connection to gpu1 closed by remote host`).
    package func explain(_ error: any Error) async -> any Error {
        guard let link = dialed.withLock({ $0 }) else { return error }
        return await link.explain(error)
    }

    /// Closes the link and returns once what carried it is gone (over ssh: the `ssh` process).
    package func finish() async {
        guard let link = dialed.withLock({ $0 }) else { return close() }
        await link.finish()
    }

    /// Made by the handshake on the reader thread, in the step that reads the welcome.
    init(name: String, welcome: Welcome, connection: Connection, clock: any TimerClock) {
        self.name = name
        self.welcome = welcome
        self.connection = connection
        self.state = Locked(State())
        self.clock = clock
    }

    /// Fulfilled when the connection has ended.
    package var closed: AsyncSignal<Connection.CloseReason> { connection.closed }

    /// Fulfilled with the node's drain timeout (seconds) when it says it drains:
    /// it takes no new work, and cancels what still runs after that long.
    package let draining = AsyncSignal<Double>()
    private let drainingState = Locked(false)

    /// Whether the node said it drains: it is sent no new work.
    package var isDraining: Bool { drainingState.withLock { $0 } }

    /// A request id not used before on this connection.
    package func nextID() -> Int {
        state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
    }

    /// Sends a request and waits for its reply. An `error` reply is thrown as a `WireError`;
    /// cancellation forgets the request (a late reply is dropped).
    ///
    /// With a `liveness` bound the link is pinged while the request is pending, and the
    /// request fails with `PeerUnresponsive` when a ping goes unanswered for that long.
    ///
    /// With a `timeout` the request fails with `TimeoutError` when no reply came within it (the
    /// link's clock keeps the time: no task sleeps per request).
    package func request(id: Int, _ request: Request, timeout: Duration? = nil, liveness: Duration? = nil) async throws -> Reply {
        try await self.request(id: id, line: request.line, isWork: request.isWork, timeout: timeout, liveness: liveness)
    }

    /// A request sent as its `line` (made before the wait: the frame of each waiting
    /// attempt, 40,000 in W15, then holds the line's bytes, not a request).
    package func request(id: Int, line: [UInt8], isWork: Bool = true, timeout: Duration?, liveness: Duration?) async throws -> Reply {
        try await pending(id: id, isWork: isWork, timeout: timeout, liveness: liveness) { () throws(Connection.Closed) in
            try self.transmit(line: line)
        }
    }

    /// A transfer: registers request `id` as `request` does, then runs `sending`
    /// instead of sending one line (it queues the header and the file's bytes on the pump,
    /// or sends the header itself). A throw from `sending` fails the request as a lost link.
    func request(id: Int, sending: @Sendable () throws -> Void, timeout: Duration?, liveness: Duration?) async throws -> Reply {
        try await pending(id: id, isWork: true, timeout: timeout, liveness: liveness) {
            state.withLock { $0.lastSent = clock.now }
            try sending()
        }
    }

    /// Registers request `id`, sends it with `send`, and waits for its reply (see `request`).
    private func pending(id: Int, isWork: Bool, timeout: Duration?, liveness: Duration?,
                         send: () throws -> Void) async throws -> Reply {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard register(.task(continuation), id: id, isWork: isWork, timeout: timeout, liveness: liveness) else { return }
                do {
                    try send()
                } catch {
                    complete(id, with: .failure(lost(saying: "\(error)")))
                }
            }
        } onCancel: {
            complete(id, with: .failure(CancellationError()))
        }
    }

    /// Sends request `id` as `line` and calls `done` once with what `request` would return or
    /// throw, with no task waiting for it: each of a scan's attempts on a peer (40,000 at once
    /// in W15) costs an entry in the table, not a task. `cancel(_:)` ends it with
    /// `CancellationError`. `done` is called on whichever thread ends the request (the link's
    /// reader, the clock's, the liveness pings' task, or the caller's), and must not block.
    ///
    /// On a link read by an event loop, the line is sent from the loop, in its turn with the
    /// others; a request cancelled before that is never sent.
    package func send(id: Int, line: [UInt8], isWork: Bool = true, timeout: Duration?, liveness: Duration?,
                      done: @escaping @Sendable (Result<Reply, any Error>) -> Void) {
        guard register(.callback(done), id: id, isWork: isWork, timeout: timeout, liveness: liveness) else { return }
        guard let loop = connection.eventLoop, !loop.isCurrent else { return transmitIfPending(id, line: line) }
        loop.execute { self.transmitIfPending(id, line: line) }
    }

    /// Ends pending request `id` with `CancellationError` (its waiter is resumed, or its
    /// callback called); nothing when it has ended already.
    package func cancel(_ id: Int) {
        complete(id, with: .failure(CancellationError()))
    }

    /// Sends request `id`'s line unless the request has ended meanwhile (whoever ends it and
    /// then posts a `cancel` posts it after this line, if it was sent).
    private func transmitIfPending(_ id: Int, line: [UInt8]) {
        let now = clock.now
        state.withLock { $0.lastSent = now }
        do {
            try connection.send(line, unless: { !self.isPending(id) })
        } catch {
            complete(id, with: .failure(lost(saying: "\(error)")))
        }
    }

    /// Enters request `id` in the table, with its time limit; false when it cannot be sent (the
    /// link ended, or the caller was cancelled), after `waiter` was resumed with why. Out of
    /// line: inlined, its locals would live in the frame that every waiting request keeps.
    @inline(never)
    private func register(_ waiter: Waiter, id: Int, isWork: Bool, timeout: Duration?, liveness: Duration?) -> Bool {
        // Checked under the lock that `complete` takes: a cancellation that came
        // before this registration is seen here, one after it finds the entry.
        let refusal = state.withLock { state -> (any Error)? in
            if let ended = state.ended { return PeerDisconnected(peer: name, reason: ended.description) }
            if Task.isCancelled { return CancellationError() }
            state.pending[id] = Pending(waiter: waiter, isWork: isWork, isWatched: liveness != nil)
            guard let liveness else { return nil }
            state.livenessBound = liveness
            if state.liveness == nil { state.liveness = Task { await self.pingWhileWatched() } }
            return nil
        }
        if let refusal {
            waiter.resume(with: .failure(refusal))
            return false
        }
        if let timeout { limit(id, to: clock.now + timeout) }
        return true
    }

    /// What the node offers for files (its welcome's `files`); nil: it takes none.
    package var files: FileSupport? { welcome.files }

    /// How files travel on this link: at the version the welcome granted, binary where the
    /// link is framed (encrypted, or at version 2 over ssh).
    var fileFormat: FileFormat { welcome.files?.format(framed: connection.isFramed) ?? .checked }

    /// The link's file pump (made on first use; stopped when the link ends).
    var pump: FilePump {
        // Asked before `state` is taken: it takes the connection's sealing lock, which a line
        // sent unless its request ended holds while it takes `state`.
        let format = fileFormat
        let (pump, ended) = state.withLock { state -> (FilePump, Bool) in
            if let pump = state.pump { return (pump, state.ended != nil) }
            let pump = FilePump(connection: connection)
            pump.use(format)
            state.pump = pump
            return (pump, state.ended != nil)
        }
        if ended { pump.stop() }
        return pump
    }

    /// Sends the `return`, `data` and `end` lines of pending request `id` to `sink` (nil: to
    /// nobody any more), on the reader thread. Without a sink, such a line fails the request.
    func stream(_ id: Int, to sink: (any ReplyStream)?) {
        state.withLock { $0.streams[id] = sink }
    }

    /// Fails pending request `id` with `error` (a returned file that went wrong), if it is still pending.
    func fail(_ id: Int, with error: any Error) {
        complete(id, with: .failure(error))
    }

    /// Fails pending request `id` with what went wrong with its files, sent or returned. A file
    /// the pump could not finish because the connection closed is a lost link, as the link's
    /// end would say: the pump often sees a failed send before the reader ends the link, and a
    /// task failure would have the task offered to this dead link again.
    func fail(_ id: Int, transfer failure: ScanFailure) {
        fail(id, with: failure == FilePump.closed ? lost(saying: failure.message) : failure)
    }

    /// The link is lost: why the connection ended when it has (`saying` until then).
    private func lost(saying fallback: String) -> PeerDisconnected {
        PeerDisconnected(peer: name, reason: connection.closeReason?.description ?? fallback)
    }

    /// Sends a message that gets no reply (`cancel`); dropped if the connection has ended.
    package func post(_ request: Request) {
        try? transmit(line: request.line)
    }

    private func transmit(line: [UInt8]) throws(Connection.Closed) {
        let now = clock.now
        state.withLock { $0.lastSent = now }
        try connection.send(line)
    }

    /// Pings the link whenever nothing was sent on it for `interval` (the pong is dropped, as
    /// any reply nobody waits for): the node sees a live client, not an idle one to close.
    /// A timer looks again when the link could next have been idle that long; the link has no
    /// task of its own for it.
    private func startKeepAlive(every interval: Duration) {
        guard interval > .zero else { return }
        keepAlive(every: interval, lookingIn: interval)
    }

    private func keepAlive(every interval: Duration, lookingIn wait: Duration) {
        let turn = state.withLock { state in
            state.keepAliveTurn += 1
            return state.keepAliveTurn
        }
        let ticket = clock.schedule(after: wait) { [weak self] in
            guard let self else { return }
            // The ping is sent from the link's loop, as its other lines are.
            guard let loop = connection.eventLoop else { return lookAtKeepAlive(every: interval) }
            loop.execute { self.lookAtKeepAlive(every: interval) }
        }
        let ended = state.withLock { state -> Bool in
            if state.keepAliveTurn == turn { state.keepAlive = ticket }
            return state.ended != nil
        }
        if ended { clock.cancel(ticket) }
    }

    private func lookAtKeepAlive(every interval: Duration) {
        let (ended, lastSent) = state.withLock { ($0.ended != nil, $0.lastSent) }
        guard !ended else { return }
        let idle = clock.now - lastSent
        guard idle >= interval else { return keepAlive(every: interval, lookingIn: interval - idle) }
        post(.ping(id: nextID()))
        keepAlive(every: interval, lookingIn: interval)
    }

    package func close() {
        connection.close()
    }

    func deliver(_ event: Connection.Event) {
        guard case .line(let line) = event else { return }
        guard let reply = try? Reply.decode(line) else { return serveCall(line) }
        if case .draining(let timeout) = reply {
            drainingState.withLock { $0 = true }
            return draining.fulfil(timeout)
        }
        if let id = reply.streamID { return route(reply, of: id) }
        guard let id = reply.requestID else { return }
        if case .error(let error) = reply { return complete(id, with: .failure(error)) }
        complete(id, with: .success(reply))
    }

    /// A returned file's line: to its request's sink; without one, a node that sends files
    /// nobody asked for fails that request (and nothing is written).
    private func route(_ reply: Reply, of id: Int) {
        let sink = state.withLock { $0.streams[id] }
        guard let sink else {
            return complete(id, with: .failure(ScanFailure(code: .badReply, message: "\(welcome.name) sent a file that was not asked for")))
        }
        sink.receive(reply)
    }

    func end(_ reason: Connection.CloseReason) {
        let (pending, keepAlive, liveness, pump) = state.withLock { state in
            state.ended = reason
            defer {
                state.pending = [:]
                state.streams = [:]
            }
            return (state.pending, state.keepAlive, state.liveness, state.pump)
        }
        if let keepAlive { clock.cancel(keepAlive) }
        liveness?.cancel()
        pump?.stop()
        for entry in pending.values {
            finish(entry, .failure(PeerDisconnected(peer: name, reason: reason.description)))
        }
    }

    /// Whether request `id` still waits for its reply.
    func isPending(_ id: Int) -> Bool {
        state.withLock { $0.pending[id] != nil }
    }

    /// Gives pending request `id` the task that sends it; cancels the task when the request
    /// has ended already.
    func setSender(_ sender: Task<Void, Never>, of id: Int) {
        let ended = state.withLock { state in
            !state.pending.changeValue(forKey: id) { $0.sender = sender }
        }
        if ended { sender.cancel() }
    }

    func complete(_ id: Int, with result: Result<Reply, any Error>) {
        let entry = state.withLock { state in
            state.streams[id] = nil
            return state.pending.removeValue(forKey: id)
        }
        guard let entry else { return }
        finish(entry, result)
    }

    /// Resumes a request (once it is out of the table) and forgets its time limit.
    func finish(_ entry: Pending, _ result: Result<Reply, any Error>) {
        if let deadline = entry.deadline { clock.cancel(deadline) }
        entry.sender?.cancel()
        entry.waiter.resume(with: result)
    }

    /// Fails request `id` with `TimeoutError` at `deadline` unless its reply came first.
    private func limit(_ id: Int, to deadline: ContinuousClock.Instant) {
        let ticket = clock.schedule(at: deadline) { [weak self] in
            self?.complete(id, with: .failure(TimeoutError()))
        }
        let answered = state.withLock { state in
            !state.pending.changeValue(forKey: id) { $0.deadline = ticket }
        }
        if answered { clock.cancel(ticket) }  // the reply (or the end) came first
    }
}

extension PeerConnection {
    /// How this link is kept secret: encrypted (a token link), by ssh, or not at all.
    func protection(over dialer: any PeerDialer) -> LinkProtection {
        connection.isEncrypted ? .encrypted : dialer.sendsToken ? .plain : .ssh
    }
}
