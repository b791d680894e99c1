import SkyNetActors
import SkyNetAuth
import SkyNetLink
import SkyNetRuntime
import SkyNetWire
import SkyNetWork

extension NodeSession {
    /// One request of a client that said hello. Runs on the reader thread: a ping is answered
    /// here, with no task of its own, so a flood of pings costs nothing but its replies (and
    /// those are bounded by the connection's back pressure).
    func serve(_ request: Request, bytes: Int) {
        switch request {
        case .hello:
            send(WireError.badRequest("already greeted").line)
        case .scan(let id, let task, let wait):
            startScan(id: id, task: task, waiting: wait.map { .seconds($0) })
        case .job(let id, let task):
            startScan(id: id, task: task)
        case .transfer(let transfer):
            startTransfer(transfer)
        case .basefile(let basefile):
            storeBasefile(basefile)
        case .chunk(let chunk):
            receive(chunk)
        case .fileEnd(let end):
            finishFile(end)
        case .cancel(let id):
            state.withLock { $0.scans[id] }?.cancel()
            cancelUpload(id)
        case .call(let id, let call):
            startActorWork(id: id, bytes: bytes, refusing: .actorNotFound(call.actor)) { await $0.execute(call).reply(id: id) }
        case .spawn(let id, let spawn):
            startActorWork(id: id, bytes: bytes, refusing: .undeclaredType(spawn.type)) { actors in
                do {
                    let actor = try await actors.spawnHere(spawn, owner: self.ownerKey)
                    return .spawned(id: id, system: actor.system, number: actor.number)
                } catch let refusal as ClusterActorSystemError {
                    return ActorReply.refused(refusal).reply(id: id)
                } catch let failure as ActorFactoryFailure {
                    return .threw(id: id, type: String(describing: type(of: failure.error)), message: "\(failure.error)")
                } catch {
                    return .error(WireError(code: .cancelled, message: "the spawn was cancelled", id: id))
                }
            }
        case .answer(let reply):
            answerCallToCaller(reply)
        case .lookup(let id, let name, let type):
            if state.withLock({ $0.scans[id] != nil || $0.uploads[id] != nil }) {
                return send(WireError.badRequest("request id \(id) is already in flight", id: id).line)
            }
            let found = node.options.actors?.lookupHere(name: name, type: type)
            send(found.map { Reply.spawned(id: id, system: $0.system, number: $0.number).line }
                 ?? WireError(code: .actorNotFound, message: "no actor named \(name)" + (type.map { " of type \($0)" } ?? ""), id: id).line)
        case .ping(let id):
            if state.withLock({ $0.scans[id] != nil || $0.uploads[id] != nil }) {
                return send(WireError.badRequest("request id \(id) is already in flight", id: id).line)
            }
            let system = node.system, counters = system.counters
            send(Reply.pong(id: id, Pong(
                name: node.options.name, running: counters.running, capacity: system.capacity,
                completed: counters.completed, failed: counters.failed, draining: node.phase != .accepting,
                actors: node.options.actors?.hostedCounts())).line)
        }
    }

    /// Starts `task` in a task of its own, or answers why not; with `waiting`, a task that finds
    /// every slot taken waits in line for one for up to that long (`LocalSystem`).
    private func startScan(id: Int, task: ScanTask, waiting: Duration? = nil) {
        let busy = { (message: String) in
            self.recordTask(job: task.job, outcome: .busy)
            return Reply.failure(id: id, task: task.id, code: .busy, message: message).line
        }
        let refusal: [UInt8]? = state.withLock { state in
            guard state.scans[id] == nil, state.uploads[id] == nil else {
                return WireError.badRequest("request id \(id) is already in flight", id: id).line
            }
            guard !node.isStopping else { return busy(node.stoppingMessage) }
            guard state.scans.count < node.options.maxRequestsPerConnection else {
                return busy("too many requests in flight on this connection")
            }
            guard node.pending.begin() else { return busy(node.stoppingMessage) }
            // A job that only waits (the built-in scan) runs on the loop that reads the link: it
            // crosses no thread and its reply leaves with the others of the loop's turn. Any
            // other may compute, or run the user's code, and would hold the loop's links.
            let onLoop = node.system.jobs.job(named: task.job)?.waitsOnly == true
            state.scans[id] = Task(executorPreference: onLoop ? connection.eventLoop : nil) {
                await self.runScan(id: id, task: task, waiting: waiting)
                self.node.pending.end()
            }
            return nil
        }
        if let refusal { send(refusal) }
    }

    /// Runs a call of a hosted actor's method, or a spawn, in a task of its own, counted among
    /// the connection's requests in flight (a `cancel` of its id cancels it). At most
    /// `maxCallsPerConnection` run at once, and the node holds at most `Options.maxCallBytes` of their
    /// lines (`bytes` each): each holds its arguments until it ends. A node that hosts no
    /// actors answers `refusal`.
    private func startActorWork(id: Int, bytes: Int, refusing refusal: ClusterActorSystemError,
                                _ work: @escaping @Sendable (ClusterActorSystem) async -> Reply) {
        let refusal: [UInt8]? = state.withLock { state in
            guard state.scans[id] == nil, state.uploads[id] == nil else {
                return WireError.badRequest("request id \(id) is already in flight", id: id).line
            }
            guard !node.isStopping else { return WireError(code: .busy, message: node.stoppingMessage, id: id).line }
            guard let actors = node.options.actors else { return ActorReply.refused(refusal).reply(id: id).line }
            guard state.scans.count + state.uploads.count < node.options.maxRequestsPerConnection else {
                return WireError(code: .busy, message: "too many requests in flight on this connection", id: id).line
            }
            guard state.calls < Node.maxCallsPerConnection else {
                return WireError(code: .busy, message: "too many calls in flight on this connection (at most \(Node.maxCallsPerConnection))", id: id).line
            }
            let heldBytes = node.callBytes.withLock { held in
                guard held + bytes <= node.options.maxCallBytes else { return false }
                held += bytes
                return true
            }
            guard heldBytes else {
                return WireError(code: .busy, message: "the calls in flight on this node hold their most bytes (\(node.options.maxCallBytes) bytes)", id: id).line
            }
            guard node.pending.begin() else {
                node.callBytes.withLock { $0 -= bytes }
                return WireError(code: .busy, message: node.stoppingMessage, id: id).line
            }
            state.calls += 1
            state.scans[id] = Task {
                let reply = await work(actors)
                // Forget the id before replying: the client may reuse it once it has the reply.
                let now = self.node.clock.now
                self.state.withLock { state in
                    state.scans.removeValue(forKey: id)
                    state.calls -= 1
                    state.lastActivity = now
                }
                await self.sendWhenRoom(self.fitting(reply, id: id), holding: bytes)
                self.node.pending.end()
            }
            return nil
        }
        if let refusal { send(refusal) }
    }

    /// Sends a call's reply, waiting for room in the queue to the client rather than ending
    /// the link: a window of calls may all answer at once with large results
    /// (`Connection.sendWhenRoom`). The call's `held` bytes count among `Options.maxCallBytes`
    /// until the reply has left, and so do the reply's own while it waits; a reply that would
    /// take the node past that bound ends its link instead (its client reads too slowly for
    /// what it asked), and so does one whose client takes nothing for the idle bound
    /// (`closeIfStalled`).
    private func sendWhenRoom(_ line: [UInt8], holding held: Int) async {
        defer { node.callBytes.withLock { $0 -= held } }
        guard (try? connection.sendIfRoom(line)) == false else { return }
        let bound = node.options.maxCallBytes
        let admitted = node.callBytes.withLock { bytes in
            guard bytes + line.count <= bound else { return false }
            bytes += line.count
            return true
        }
        guard admitted else {
            node.log("[Node] Closing \(connection.peer): its replies waiting to be read would hold more than the node's \(bound) bytes for calls")
            return connection.close(because: .writeBacklog)
        }
        let sent = connection.progress.sent, now = node.clock.now
        state.withLock { state in
            if state.waitingReplies == 0 { state.sendProgress = (sent, now) }
            state.waitingReplies += 1
        }
        defer {
            state.withLock { $0.waitingReplies -= 1 }
            node.callBytes.withLock { $0 -= line.count }
        }
        _ = try? await connection.sendWhenRoom(line)
    }

    /// Closes the connection if replies have waited for room while the client took none of
    /// what was sent for `bound` (the node's sweep calls it with the idle bound).
    func closeIfStalled(now: ContinuousClock.Instant, bound: Duration) {
        // What was sent is a system call (the socket's unsent bytes): asked only while a reply waits.
        guard state.withLock({ $0.waitingReplies > 0 }) else { return }
        let sent = connection.progress.sent
        let stalled = state.withLock { state -> Bool in
            guard state.waitingReplies > 0 else { return false }
            guard sent == state.sendProgress.sent else {
                state.sendProgress = (sent, now)
                return false
            }
            return now - state.sendProgress.at >= bound
        }
        guard stalled else { return }
        node.log("[Node] Closing \(connection.peer): it read none of its replies for \(String(cFormat: "%g", bound.seconds)) s")
        connection.close(because: .writeBacklog)
    }

    /// The most bytes a reply line may hold: a wire line (on an encrypted link, a frame's
    /// message: its length and tag are not counted).
    var replyRoom: Int { node.options.limits.maxLineBytes }

    /// `reply`'s line; a result too large for a wire line is told as what the method threw
    /// (it ran, so the caller must not hear that it did not).
    private func fitting(_ reply: Reply, id: Int) -> [UInt8] {
        let line = reply.line
        let room = replyRoom
        guard line.count > room else { return line }
        return Reply.threw(id: id, type: ActorReply.resultNotSent,
                           message: "the result is \(line.count) bytes once encoded, over the \(room) of a wire line").line
    }

    private func runScan(id: Int, task: ScanTask, waiting: Duration?) async {
        let started = ContinuousClock.now
        let result: Result<String, any Error>
        do { result = .success(try await node.system.run(task, waiting: waiting)) } catch { result = .failure(error) }
        answer(id: id, task: task, with: result, started: started)
    }

    /// Sends the reply of scan `id`, done, and logs it. Out of line from `runScan`: what it
    /// makes would otherwise take room in the frame every running scan keeps.
    @inline(never)
    private func answer(id: Int, task: ScanTask, with result: Result<String, any Error>, started: ContinuousClock.Instant) {
        var reply: Reply
        switch result {
        case .success(let value):
            reply = .result(id: id, task: task.id, result: value)
        case .failure(let failure as ScanFailure):
            reply = .failure(id: id, task: task.id, code: failure.code, message: failure.message)
        case .failure(is CancellationError):
            reply = .failure(id: id, task: task.id, code: .cancelled, message: "cancelled")
        case .failure(let error):
            reply = .failure(id: id, task: task.id, code: .taskFailed, message: "\(error)")
        }
        // Forget the id before replying: the client may reuse it as soon as it has the reply.
        let now = node.clock.now
        let client = state.withLock { state in
            state.scans.removeValue(forKey: id)
            state.lastActivity = now
            if case .serving(let client) = state.phase { return client }
            return "client"
        }
        var line = reply.line
        let room = replyRoom
        if line.count > room {
            // Escaping (a result full of control characters grows up to six times) can take a
            // result past a wire line, which the client would refuse and drop the link for.
            reply = .failure(id: id, task: task.id, code: .taskFailed,
                             message: "the result is \(line.count) bytes once encoded, over the \(room) of a wire line")
            line = reply.line
        }
        sendTaskReply(reply, line: line, job: task.job, started: started)
        if node.options.verbose {
            let seconds = (ContinuousClock.now - started).seconds
            let outcome = switch reply {
            case .result: "completed"
            case .failure(_, _, let code, let message): "\(code): \(message)"
            default: "answered"
            }
            // Escaped: a job's error and stderr are its own text, and this log may be a terminal
            // (over `--stdio`, the coordinator's).
            node.log("[Node] Task \(task.input) (\(task.job)) from \(client): \(outcome) in \(String(cFormat: "%.3f", seconds)) s".escapingControlCharacters)
        }
    }
}
