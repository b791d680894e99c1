import SkyNetRuntime
import SkyNetScheduler
import SkyNetWire
import SkyNetWork

/// A peer node behind the `ScanSystem` interface: each task is one request, bounded by a
/// time limit on the request itself; a request that is given up is cancelled on the node.
///
/// Liveness is not a deadline. A task of the built-in scan (short by design) is bounded by
/// `timeout`. Any other job may run for hours: its request is bounded by the task's deadline
/// plus `deadlineMargin` (or by `ScanTask.maxTimeout` when it has none), and the peer's
/// liveness is decided by pings on the link while such work is in flight: a peer that answers
/// no ping within `timeout` has every pending task failed at once (`PeerUnresponsive`).
///
/// A peer whose node holds a line (`waitsInLine`) is sent each slot's next scan before the
/// slot frees: the scan may wait there for up to `timeout`, and its request is bounded by
/// twice that (its wait, then its run).
///
/// A small circuit breaker: after a timeout or a missed ping the peer counts as unresponsive
/// (`onHealth(false)`: the registry holds back new work) and is pinged until it answers
/// (`onHealth(true)`). Every bound and rest is kept on the peer's clock (`PeerConnection.clock`).
package actor RemoteSystem: RequestingSystem {
    package nonisolated let name: String
    package nonisolated var isLocal: Bool { false }
    /// The event loop that reads the link (nil for a link read by a thread of its own): an
    /// attempt that is a task (a transfer: `start` takes the others) runs there, sends its
    /// request in the loop's turn with the others, and is resumed there by its reply, with no
    /// wake of a pool thread between.
    package nonisolated var preferredExecutor: (any TaskExecutor)? { peer.connection.eventLoop }
    package nonisolated let peer: PeerConnection
    /// The bound of a built-in scan request, and of a ping.
    package nonisolated let timeout: Duration
    /// Added to a task's deadline to bound its request: the node stops the task at the
    /// deadline, gives it a grace to end, then answers.
    package nonisolated let deadlineMargin: Duration
    /// The scan's files: with it, each task is a `transfer` request.
    package nonisolated let transfer: TransferContext?
    /// Whether its scans may wait in line at the node (its welcome offered a `queue`).
    package nonisolated let waitsInLine: Bool
    private let onHealth: @Sendable (_ responsive: Bool) async -> Void
    private var probing = false

    /// The default `deadlineMargin`: the node's grace between SIGTERM and SIGKILL, and the trip back.
    package static let defaultDeadlineMargin: Duration = .seconds(10)

    package init(name: String, peer: PeerConnection, timeout: Duration,
                deadlineMargin: Duration = defaultDeadlineMargin, transfer: TransferContext? = nil, waitsInLine: Bool = false,
                onHealth: @escaping @Sendable (_ responsive: Bool) async -> Void = { _ in }) {
        self.transfer = transfer
        self.waitsInLine = waitsInLine
        self.name = name
        self.peer = peer
        self.timeout = timeout
        self.deadlineMargin = deadlineMargin
        self.onHealth = onHealth
    }

    /// Nonisolated: it touches no state of the actor but when the peer seems gone, so a
    /// request costs no hop onto the actor.
    package nonisolated func run(_ task: ScanTask) async throws -> String {
        do {
            if let transfer, transfer.spec.isActive { return try await runTransfer(task, transfer) }
            let id = peer.nextID()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    request(task, id: id) { continuation.resume(with: $0) }
                }
            } onCancel: {
                peer.cancel(id)
            }
        } catch {
            throw drained(error)
        }
    }

    /// `run` with no task waiting (`RequestingSystem`): the scan's attempts on this peer.
    package nonisolated func start(_ task: ScanTask, done: @escaping @Sendable (Result<String, any Error>) -> Void) -> (any StartedAttempt)? {
        if let transfer, transfer.spec.isActive { return nil }
        let id = peer.nextID()
        // Not stopped by our scan, as far as `drained` goes: a scan that stops counts what
        // comes back from a draining peer as not run, whatever it is.
        request(task, id: id) { [self] outcome in done(outcome.mapError { drained($0, stopped: false) }) }
        return PeerRequest(peer: peer, id: id)
    }

    /// What a failure on a draining peer is: a lost link, or a `cancelled` the
    /// coordinator did not ask for (the node's drain timeout ran out), is `PeerDrained`, which
    /// re-runs the task elsewhere at no attempt's cost. Anything else stays what it is.
    nonisolated func drained(_ error: any Error, stopped: Bool = Task.isCancelled) -> any Error {
        guard peer.isDraining, !stopped else { return error }
        if error is PeerDisconnected { return PeerDrained(peer: name, disconnected: true) }
        if let failure = error as? ScanFailure, failure.code == .cancelled { return PeerDrained(peer: name, disconnected: false) }
        return error
    }

    /// Sends `task` as request `id` and calls `done` with its result, or with why it has none.
    private nonisolated func request(_ task: ScanTask, id: Int, done: @escaping @Sendable (Result<String, any Error>) -> Void) {
        let (line, bound, liveness) = request(for: task, id: id)
        peer.send(id: id, line: line, timeout: bound, liveness: liveness) { [self] reply in
            switch reply {
            case .success(let reply):
                done(Result { try result(of: reply, for: task) })
            case .failure(let error):
                givenUp(error, id: id, task: task) { done(.failure($0)) }
            }
        }
    }

    /// What `reply` says of `task`: its result, or the failure it is.
    private nonisolated func result(of reply: Reply, for task: ScanTask) throws -> String {
        switch reply {
        case .result(_, let taskID, let result) where taskID == task.id:
            return result
        case .result(_, let taskID, _):
            // Matched by request id, a result must still be this task's: a node that answers
            // for another task would complete this one with that one's result.
            throw ScanFailure(code: .badReply, message: "\(name) answered task \(task.id) with the result of task \(taskID)")
        case .failure(_, _, let code, let message):
            throw ScanFailure(code: code, message: message)
        default:
            throw ScanFailure(code: .badReply, message: "\(name) answered a task with \(reply)")
        }
    }

    /// The line of `task`'s request `id` and its bounds. Made here, apart: the frame that
    /// every running attempt holds (40,000 of them over W15's 10,000 nodes) keeps one call of
    /// `request` and the line's bytes, not a request for every kind.
    private nonisolated func request(for task: ScanTask, id: Int) -> (line: [UInt8], bound: Duration, liveness: Duration?) {
        guard task.isScan else { return (Request.run(id: id, task: task).line, bound(of: task), timeout) }
        guard waitsInLine else { return (Request.scan(id: id, task: task).line, timeout, nil) }
        return (Request.scan(id: id, task: task, wait: timeout.seconds).line, timeout * 2, nil)
    }

    /// A request that ended without a reply: `done` gets the error its attempt fails with.
    /// One given up (its time limit, a peer that stopped answering, the scan stopped) is
    /// cancelled on the node, should the node still be alive, so its slot is freed; after a
    /// timeout or a missed ping the peer is probed until it answers.
    nonisolated func givenUp(_ error: any Error, id: Int, task: ScanTask, done: @escaping @Sendable (any Error) -> Void) {
        guard error is TimeoutError || error is PeerUnresponsive || error is CancellationError else { return done(error) }
        peer.post(.cancel(id: id))
        if error is CancellationError { return done(error) }
        if error is TimeoutError, !task.isScan { return done(deadlinePassed(task)) }
        Task {
            await startProbing()
            done(error)
        }
    }

    /// `givenUp` for a request a task waits for: returns what it throws.
    nonisolated func givenUp(_ error: any Error, id: Int, task: ScanTask) async -> any Error {
        await withCheckedContinuation { continuation in
            givenUp(error, id: id, task: task) { continuation.resume(returning: $0) }
        }
    }

    /// How long a job's request may take: its deadline and the margin, or the longest deadline.
    nonisolated func bound(of task: ScanTask) -> Duration {
        guard let seconds = task.timeout else { return .seconds(ScanTask.maxTimeout) }
        return .seconds(seconds) + deadlineMargin
    }

    nonisolated func deadlinePassed(_ task: ScanTask) -> ScanFailure {
        let deadline = task.timeout.map { "its deadline of \($0.asWritten) s" } ?? "the longest deadline"
        return ScanFailure(code: .deadline,
                           message: "\(name) gave no answer within \(deadline) and a margin of \(deadlineMargin.seconds.asWritten) s")
    }

    /// Marks the peer unresponsive (once) and pings it until it answers or disconnects.
    private func startProbing() {
        guard !probing else { return }
        probing = true
        Task {
            await onHealth(false)
            let peer = self.peer, timeout = self.timeout
            while !Task.isCancelled {
                let id = peer.nextID()
                do {
                    _ = try await TimeoutTask(timeout: timeout, clock: peer.clock) { try await peer.request(id: id, .ping(id: id)) }.value
                    await onHealth(true)
                    break
                } catch is PeerDisconnected {
                    break  // the link notices and removes the peer
                } catch {
                    try? await peer.clock.sleep(for: .milliseconds(200))
                }
            }
            probing = false
        }
    }
}

/// A request of `RemoteSystem.start`: stopping it cancels it on the node too.
struct PeerRequest: StartedAttempt {
    let peer: PeerConnection
    let id: Int

    func cancel() { peer.cancel(id) }
}
