import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// A file a node's connection is receiving: a `transfer`'s input or a `basefile`, between its
/// request and its `end`. Lines arrive on the reader thread one at a time; the session's end
/// (another thread) may discard it meanwhile, so every use of the file takes `lock`.
final class NodeUpload: @unchecked Sendable {  // safe: `incoming` is only touched with `lock` held
    enum Kind: Sendable {
        case transfer(TransferRequest, TaskUpload)
        case basefile(BasefileRequest, BasefileUpload)
    }

    let kind: Kind
    /// The size announced, for the free space's numbers when the disk fills up.
    let size: Int64
    private let lock = Guarded(false)  // true once finished or discarded
    private let incoming: IncomingFile
    private let reservation: FreeSpace.Reservation?

    init(_ kind: Kind, header: FileHeader, file: OpenFile, name: String) {
        self.kind = kind
        size = header.size
        incoming = IncomingFile(file: file, header: header, name: name)
        reservation = switch kind {
        case .transfer(_, let upload): upload.reservation
        case .basefile: nil  // a basefile's reservation is given back when it is stored or discarded
        }
    }

    var id: Int {
        switch kind {
        case .transfer(let request, _): request.id
        case .basefile(let request, _): request.id
        }
    }

    /// Writes one chunk (reader thread).
    func append(_ chunk: FileChunk) throws(ScanFailure) {
        try lock.withLock { (done) throws(ScanFailure) in
            guard !done else { return }
            try incoming.append(chunk)
        }
        reservation?.wrote(Int64(chunk.bytes.count))
    }

    /// Checks the end (reader thread): size, digest, then mode and time.
    func finish(_ end: FileEnd) throws(ScanFailure) {
        try lock.withLock { (done) throws(ScanFailure) in
            guard !done else { throw ScanFailure(code: .cancelled, message: "cancelled") }
            _ = try incoming.finish(end)
            // Only a file that arrived whole is done: one that failed is still to be discarded.
            done = true
        }
    }

    /// Gives up: the file closed, and what was readied for it undone (its task's directory or
    /// the partial basefile). Later calls do nothing.
    func discard() {
        let first = lock.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        lock.withLock { _ in incoming.discard() }
        switch kind {
        case .transfer(_, let upload): upload.discard()
        case .basefile(_, let upload): upload.discard()
        }
    }
}
