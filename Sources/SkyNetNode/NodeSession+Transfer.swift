import SkyNetAuth
import SkyNetLink
import SkyNetRuntime
import SkyNetTransfer
import SkyNetWire
import SkyNetWork

extension NodeSession {
    /// The task of a `transfer` whose input arrived: run in its work directory; on success each
    /// return sent (one at a time, through the pump), then the `result`, so that every returned
    /// byte precedes it on the wire. The directory goes after the reply with `cleanup`, after a
    /// cancel, and otherwise when the connection ends.
    func runTransfer(_ request: TransferRequest, _ upload: TaskUpload) async {
        let id = request.id, task = request.task
        let started = ContinuousClock.now
        // From here the task holds a slot of the system (or meets `busy` there), not an upload's place.
        upload.started()
        var reply: Reply
        var cancelled = false
        do {
            let result = try await node.system.run(task, workingDirectory: upload.workDir.path)
            try await sendReturns(request, upload)
            reply = .result(id: id, task: task.id, result: result)
        } catch let failure as ScanFailure {
            reply = .failure(id: id, task: task.id, code: failure.code, message: failure.message)
            cancelled = failure.code == .cancelled
        } catch is CancellationError {
            reply = .failure(id: id, task: task.id, code: .cancelled, message: "cancelled")
            cancelled = true
        } catch {
            reply = .failure(id: id, task: task.id, code: .taskFailed, message: "\(error)")
        }
        let now = node.clock.now
        state.withLock { state in
            state.scans.removeValue(forKey: id)
            state.lastActivity = now
        }
        let room = replyRoom
        if reply.line.count > room {
            reply = .failure(id: id, task: task.id, code: .taskFailed,
                             message: "the result is \(reply.line.count) bytes once encoded, over the \(room) of a wire line")
        }
        sendTaskReply(reply, job: task.job, started: started)
        let files = self.files, pending = node.pending
        guard request.cleanup || cancelled || Task.isCancelled else {
            files.end()
            return pending.end()
        }
        // On the blocking pool, not the cooperative one: a large tree takes time to remove.
        BlockingPool.shared.execute {
            upload.workDir.remove()
            files.end()
            pending.end()
        }
    }

    /// Sends the returns of `request` in order, each whole before the next; throws the first
    /// failure (`missing-return`, `file-too-large`, a lost connection) or, when the task is
    /// cancelled meanwhile, `cancelled`.
    private func sendReturns(_ request: TransferRequest, _ upload: TaskUpload) async throws {
        let id = request.id, workDir = upload.workDir
        let stopped = Locked(false)
        for (index, path) in upload.returns.enumerated() {
            let done = AsyncSignal<Result<Void, ScanFailure>>()
            pump.enqueue(OutgoingFile(
                id: id, file: index, maxSize: request.maxReturnSize, limitName: "the coordinator's max_return_size", name: path.text,
                open: { () throws(ScanFailure) -> OpenFile in try workDir.openReturn(path) },
                header: { header in Reply.returnFile(ReturnHeader(id: id, file: index, header: header)).line },
                isCancelled: { stopped.withLock { $0 } },
                done: { done.fulfil($0) }))
            let result = await withTaskCancellationHandler { await done.value } onCancel: { stopped.withLock { $0 = true } }
            if Task.isCancelled { throw CancellationError() }
            _ = try result.get()
        }
    }
}
