import SkyNetAuth
import SkyNetRuntime
import SkyNetTransfer
import SkyNetWire
import SkyNetWork

/// The file requests on a node (docs/PROTOCOL.md, "Files"): a `transfer` runs a
/// task in a work directory of its own, its input file received first and its returns sent
/// after; a `basefile` is stored for every later task of the connection. Requests, chunks and
/// ends are handled on the reader thread (writing a chunk there is the back pressure a slow
/// disk puts on the coordinator); the task runs in a `Task` as a `job` does; returns go out
/// through the connection's `FilePump`.
extension NodeSession {
    /// A `transfer`: refused at once (`busy` before any byte), or readied to receive its input,
    /// or (without a file) run.
    func startTransfer(_ request: TransferRequest) {
        let id = request.id, task = request.task
        guard node.offersFiles else { return send(WireError(code: .unknownType, message: "unknown type \"transfer\"", id: id).line) }
        guard node.system.jobs.job(named: task.job) != nil else {
            return sendTaskReply(.failure(id: id, task: task.id, code: .unknownJob, message: "\(node.options.name) has no job '\(task.job)'"),
                                 job: task.job, started: nil)
        }
        if let refusal = admitFileRequest(id) {
            if refusal.code == .busy { recordTask(job: task.job, outcome: .busy) }
            return send(refusal.line)
        }
        let upload: TaskUpload
        do throws(ScanFailure) {
            let connection = try files.directory()
            let basefiles = files.basefiles
            let base = basefiles.isEmpty ? nil : try? connection.handle.directory(["base"], create: false)
            upload = try TaskUpload.prepare(
                TaskUpload.Request(sector: task.input, input: task.inputText, fileSize: request.file?.size, returns: request.returns),
                node: node.options.name, files: node.files, maxFileSize: node.options.maxFileSize,
                running: node.system.counters.running, capacity: node.system.capacity,
                connection: connection, basefiles: basefiles, base: base)
        } catch {
            endFileRequest()
            guard error.code != .badRequest else { return send(WireError.badRequest(error.message, id: id).line) }
            return sendTaskReply(.failure(id: id, task: task.id, code: error.code, message: error.message), job: task.job, started: nil)
        }
        guard let header = request.file, let input = upload.input else { return run(request, upload) }
        let receiving = NodeUpload(.transfer(request, upload), header: header, file: input.file, name: input.path.text,
                                   digests: pump.format.digests, now: node.clock.now)
        state.withLock { $0.uploads[id] = receiving }
    }

    /// A `basefile`: readied to receive, or refused with an `error` naming the request.
    func storeBasefile(_ request: BasefileRequest) {
        let id = request.id
        guard node.offersFiles else { return send(WireError(code: .unknownType, message: "unknown type \"basefile\"", id: id).line) }
        // A coordinator sends its basefiles one after the other: more at once would only let a
        // connection hold many descriptors and reservations of free space. (Requests of a
        // connection come one at a time on its reader thread: nothing adds one meanwhile.)
        guard !state.withLock({ $0.uploads.values.contains(where: \.isBasefile) }) else {
            return send(WireError(code: .busy, message: "one basefile at a time on a connection", id: id).line)
        }
        if let refusal = admitFileRequest(id) { return send(refusal.line) }
        let upload: BasefileUpload
        do throws(ScanFailure) {
            upload = try BasefileUpload.prepare(request.path, size: request.file.size, session: files, maxFileSize: node.options.maxFileSize)
        } catch {
            endFileRequest()
            return send(WireError(code: error.code, message: error.message, id: id).line)
        }
        let receiving = NodeUpload(.basefile(request, upload), header: request.file, file: upload.file, name: upload.path.text,
                                   digests: pump.format.digests, now: node.clock.now)
        state.withLock { $0.uploads[id] = receiving }
    }

    /// A `data` line: written to its file. One for an id that is not receiving is ignored (its
    /// request may just have failed: lines sent before the coordinator read that are on the way).
    func receive(_ chunk: FileChunk) {
        guard chunk.file == nil, let upload = state.withLock({ $0.uploads[chunk.id] }) else { return }
        do throws(ScanFailure) {
            try upload.append(chunk, now: node.clock.now)
        } catch {
            // The disk filled up under us: said with the numbers of this moment.
            let failure = error.code == .noSpace ? node.files.space.failure(needed: upload.size - chunk.offset) : error
            fail(upload, failure)
        }
    }

    /// An `end` line: the file checked, then the task run or the basefile stored.
    func finishFile(_ end: FileEnd) {
        guard end.file == nil, let upload = state.withLock({ $0.uploads.removeValue(forKey: end.id) }) else { return }
        do throws(ScanFailure) {
            try upload.finish(end)
        } catch {
            return fail(upload, error, removed: true)
        }
        switch upload.kind {
        case .transfer(let request, let taskUpload):
            run(request, taskUpload)
        case .basefile(let request, let basefile):
            basefile.stored()
            endFileRequest()
            send(Reply.stored(id: request.id).line)
        }
    }

    /// A `cancel` for an upload not running yet: discarded, answered `cancelled`.
    func cancelUpload(_ id: Int) {
        guard let upload = state.withLock({ $0.uploads.removeValue(forKey: id) }) else { return }
        fail(upload, ScanFailure(code: .cancelled, message: "cancelled"), removed: true)
    }

    /// Fails the uploads that received no chunk for `bound` (the node's idle timeout).
    func failStalledUploads(now: ContinuousClock.Instant, bound: Duration) {
        let stalled = state.withLock { $0.uploads.values.filter { $0.isStalled(now: now, bound: bound) } }
        for upload in stalled {
            fail(upload, ScanFailure(code: .badFile, message: "no bytes of \(upload.name) came for \(String(cFormat: "%g", bound.seconds)) s"))
        }
    }

    /// A bad line naming an upload's id (a malformed `data` or `end`): its `bad-request` answer,
    /// which carries the id, ends the request for the coordinator (docs/PROTOCOL.md), so the
    /// upload ends here too — its directory, its place and its id freed, later chunks ignored.
    func endUpload(_ id: Int?) {
        guard let id, let upload = state.withLock({ $0.uploads.removeValue(forKey: id) }) else { return }
        upload.discard()
        endFileRequest()
    }

    /// Discards every upload of the connection (it ended).
    func discardUploads() {
        let uploads = state.withLock { state in
            defer { state.uploads = [:] }
            return Array(state.uploads.values)
        }
        for upload in uploads {
            upload.discard()
            endFileRequest()
        }
    }

    /// Whether a file request `id` may begin: its id free, the node not stopping, the
    /// connection's bound on requests not reached. Counts it (pending, live files) when so;
    /// else the error to answer.
    private func admitFileRequest(_ id: Int) -> WireError? {
        let refusal: WireError? = state.withLock { state in
            guard state.scans[id] == nil, state.uploads[id] == nil else {
                return WireError.badRequest("request id \(id) is already in flight", id: id)
            }
            guard state.scans.count + state.uploads.count < node.options.maxRequestsPerConnection else {
                return WireError(code: .busy, message: "too many requests in flight on this connection", id: id)
            }
            return nil
        }
        if let refusal { return refusal }
        guard node.pending.begin() else { return WireError(code: .busy, message: node.stoppingMessage, id: id) }
        guard files.begin() else {
            node.pending.end()
            return WireError(code: .cancelled, message: "the connection ended", id: id)
        }
        return nil
    }

    /// A file request ended (answered): it no longer holds the node's stop or the connection's
    /// directory.
    private func endFileRequest() {
        files.end()
        node.pending.end()
    }

    /// Fails an upload: discarded, answered (`failure` for a transfer, `error` for a basefile).
    /// `removed`: the caller took it out of the table; else it is taken here, and only by one
    /// party: a connection that ended meanwhile (`discardUploads`) already discarded and ended
    /// it, and ending it twice would free the node's counts twice.
    private func fail(_ upload: NodeUpload, _ failure: ScanFailure, removed: Bool = false) {
        if !removed {
            guard state.withLock({ $0.uploads.removeValue(forKey: upload.id) }) != nil else { return }
        }
        upload.discard()
        endFileRequest()
        switch upload.kind {
        case .transfer(let request, _):
            sendTaskReply(.failure(id: request.id, task: request.task.id, code: failure.code, message: failure.message),
                          job: request.task.job, started: nil)
        case .basefile(let request, _):
            send(WireError(code: failure.code, message: failure.message, id: request.id).line)
        }
    }

    /// Runs the task of `request` in its work directory, sends its returns, then its reply.
    private func run(_ request: TransferRequest, _ upload: TaskUpload) {
        let started = state.withLock { state in
            guard case .serving = state.phase else { return false }
            state.scans[request.id] = Task { await self.runTransfer(request, upload) }
            return true
        }
        if !started {
            upload.discard()
            endFileRequest()
        }
    }
}
