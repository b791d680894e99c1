import SkyNetRuntime
import SkyNetTransfer
import SkyNetWire
import SkyNetWork

/// What a peer's tasks need when the scan's files travel.
package struct TransferContext: Sendable {
    package let spec: TransferSpec
    /// Where each task's returned files are recorded for the journal.
    package let records: ReturnRecords
    /// Where returned files are written (nil: the working directory and `/`, opened per task).
    package let roots: ReturnRoots?

    package init(spec: TransferSpec, records: ReturnRecords, roots: ReturnRoots? = nil) {
        self.spec = spec
        self.records = records
        self.roots = roots
    }
}

extension RemoteSystem {
    /// Runs `task` as a `transfer` request: its input file (with `--transfer`) goes through the
    /// link's file pump behind the request's header, its returned files come back through a
    /// `ReturnSink` and are renamed into place only once the node's `result` came; then they are
    /// recorded and the result returned. Any failure leaves no `.part` here.
    nonisolated func runTransfer(_ task: ScanTask, _ context: TransferContext) async throws -> String {
        let spec = context.spec
        let plan: TransferPlan
        do { plan = try spec.plan(for: task) } catch { throw ScanFailure(code: .badFile, message: error.description, isFinal: true) }
        let roots: ReturnRoots
        if let given = context.roots {
            roots = given
        } else {
            roots = try await onBlockingPool { try ReturnRoots.current() }
        }
        let peer = self.peer, name = self.name
        let id = peer.nextID()
        let over = Locked(false)  // the request has its outcome: the pump sends no more of its file
        let deadline = TransferDeadline(clock: peer.clock)
        let bound = bound(of: task)  // from the last byte sent to the first returned file or the reply
        // A failure seen on the reader thread or the pump's: the request fails with it (a lost
        // link, when the pump found the connection closed), and the node is told to stop (its
        // work directory goes).
        let failRequest: @Sendable (ScanFailure) -> Void = { failure in
            peer.fail(id, transfer: failure)
            peer.post(.cancel(id: id))
        }
        // Once the returns flow, each of their lines must follow the last within the link's
        // liveness bound: a node that answers pings but stops sending its files would
        // otherwise hold the task for ever, past --timeout and --task-timeout.
        let stalled = ScanFailure(code: .badReply, message: "\(name) sent nothing of its returned files for \(String(cFormat: "%g", timeout.seconds)) s")
        let progressed: @Sendable () -> Void = { [timeout] in deadline.progressed(bound: timeout) { failRequest(stalled) } }
        let digests = ReturnDigests(check: peer.fileFormat.digests, keep: spec.keepsDigests)
        let sink = plan.returns.isEmpty ? nil : ReturnSink(targets: plan.returns.map(\.local), peer: name, maxSize: spec.maxFileSize,
                                                           roots: roots, digests: digests, onLine: progressed, onFailure: failRequest)
        let nodeTask = ScanTask(id: task.id, input: task.input, duration: task.duration, job: task.job, text: plan.nodeInput,
                                timeout: task.timeout)
        let returns = plan.returns.map(\.node.text)
        let header: @Sendable (FileHeader?) -> [UInt8] = { file in
            Request.transfer(TransferRequest(id: id, task: nodeTask, file: file, returns: returns, maxReturnSize: spec.maxFileSize,
                                             cleanup: spec.cleanup)).line
        }
        // Once every byte is out, the node runs the task: from then on its deadline (and the
        // margin) bounds the wait for the first returned file or the reply.
        let armDeadline: @Sendable () -> Void = {
            deadline.arm(after: bound) { peer.fail(id, with: TimeoutError()) }
        }
        let sending: @Sendable () throws -> Void
        if let input = plan.localInput {
            let limit = OutgoingFile.limit(scan: spec.maxFileSize, peer: peer.files?.maxFileSize, named: name)
            let file = OutgoingFile(
                id: id, file: nil, maxSize: limit.maxSize, limitOwner: limit.owner, name: input.text,
                open: { () throws(ScanFailure) -> OpenFile in try Self.openInput(input, in: roots) },
                header: { header($0) },
                isCancelled: { over.withLock { $0 } },
                done: { result in
                    switch result {
                    case .success: armDeadline()
                    case .failure(let failure): failRequest(failure)
                    }
                })
            sending = {
                peer.stream(id, to: sink)
                peer.pump.enqueue(file)
            }
        } else {
            sending = {
                peer.stream(id, to: sink)
                try peer.connection.send(header(nil))
                armDeadline()
            }
        }
        let reply: Reply
        do {
            defer {
                over.withLock { $0 = true }
                deadline.disarm()
                peer.stream(id, to: nil)
            }
            reply = try await peer.request(id: id, sending: sending, timeout: nil, liveness: timeout)
        } catch {
            await discard(sink)
            if error is TimeoutError { peer.post(.cancel(id: id)); throw deadlinePassed(task) }
            throw await givenUp(error, id: id, task: task)
        }
        switch reply {
        case .result(_, _, let result):
            guard let sink else { return result }
            let files = try await onBlockingPool { try sink.commit() }
            context.records.put(task.id, files)
            return result
        case .failure(_, _, let code, let message):
            await discard(sink)
            throw ScanFailure(code: code, message: code == .missingReturn ? Self.namedHere(message, plan.returns) : message)
        default:
            await discard(sink)
            throw ScanFailure(code: .badReply, message: "\(name) answered a transfer with \(reply)")
        }
    }

    /// A node names a missing return by the path it was given, which for an absolute input
    /// lost its leading `/` (`data/a.png` for `/data/a.png`): said by the path the template
    /// gave here, as the local system says it. Other messages are left as they came.
    static func namedHere(_ message: String, _ returns: [(node: TransferPath, local: TransferPath)]) -> String {
        for (node, local) in returns where node.text != local.text {
            for prefix in ["did not produce ", ""] where message.hasPrefix(prefix + node.text) {
                let rest = message.dropFirst(prefix.count + node.text.count)
                if rest.isEmpty || rest.hasPrefix(" ") { return prefix + local.text + rest }
            }
        }
        return message
    }

    /// Removes every `.part` of the task (file system calls: on the blocking pool).
    private nonisolated func discard(_ sink: ReturnSink?) async {
        guard let sink else { return }
        _ = try? await onBlockingPool { sink.discard() }
    }

    /// Opens the task's input here, one component at a time, never through a link. Final when
    /// it cannot be: running the task again cannot make it readable.
    package static func openInput(_ input: TransferPath, in roots: ReturnRoots) throws(ScanFailure) -> OpenFile {
        do {
            return try roots.root(of: input).directory(input.directories, create: false).openFile(input.name)
        } catch {
            let why = error.code == ELOOP || error.code == ENOTDIR
                ? "it passes through a symbolic link (\(error.path)); give its real path (realpath)"
                : "\(error)"
            throw ScanFailure(code: .badFile, message: "cannot send \(input): \(why)", isFinal: true)
        }
    }
}

/// The time limit of a transfer once its upload ended, on the link's clock; disarmed by the
/// first returned file (which may take long to arrive whole) or the reply. Behind a lock (`Locked`).
final class TransferDeadline: Sendable {
    private struct State: Sendable {
        var ticket: TimerTicket?
        var disarmed = false
        /// Lines of the returns came: from then on only their progress bound counts.
        var flowing = false
    }

    private let clock: any TimerClock
    private let state = Locked(State())

    init(clock: any TimerClock) {
        self.clock = clock
    }

    /// Runs `expired` after `bound` (the task's deadline, once its upload is out) unless
    /// disarmed first, or unless the returns already flow: the pump's thread may get here
    /// after the reader saw the first lines of a quick task, and must not replace their bound.
    func arm(after bound: Duration, _ expired: @escaping @Sendable () -> Void) {
        schedule(after: bound, progress: false, expired)
    }

    /// A line of the returns came: `expired` runs unless another comes within `bound`.
    func progressed(bound: Duration, _ expired: @escaping @Sendable () -> Void) {
        schedule(after: bound, progress: true, expired)
    }

    private func schedule(after bound: Duration, progress: Bool, _ expired: @escaping @Sendable () -> Void) {
        let ticket = clock.schedule(at: clock.now + bound, expired)
        let (keep, replaced) = state.withLock { state -> (Bool, TimerTicket?) in
            guard !state.disarmed, progress || !state.flowing else { return (false, nil) }
            if progress { state.flowing = true }
            defer { state.ticket = ticket }
            return (true, state.ticket)
        }
        if !keep { _ = clock.cancel(ticket) }
        if let replaced { _ = clock.cancel(replaced) }
    }

    func disarm() {
        let ticket = state.withLock { state -> TimerTicket? in
            state.disarmed = true
            defer { state.ticket = nil }
            return state.ticket
        }
        if let ticket { _ = clock.cancel(ticket) }
    }
}
