import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// A file a node's connection is receiving: a `transfer`'s input or a `basefile`, between its
/// request and its `end`. Lines arrive on the reader thread one at a time; the session's end
/// (another thread) may discard it meanwhile, so every use of the file takes `lock`.
package final class NodeUpload: @unchecked Sendable {  // safe: `incoming` is only touched with `lock` held
    /// Whether it is over (finished or discarded), and when its last chunk came.
    private struct Progress {
        var done = false
        var lastChunk: ContinuousClock.Instant
    }

    package enum Kind: Sendable {
        case transfer(TransferRequest, TaskUpload)
        case basefile(BasefileRequest, BasefileUpload)
    }

    package let kind: Kind
    /// The size announced, for the free space's numbers when the disk fills up.
    package let size: Int64
    private let lock: Guarded<Progress>
    private let incoming: IncomingFile
    private let reservation: FreeSpace.Reservation?

    /// The file's path as sent, for messages.
    package let name: String

    /// `digests`: whether the file's `end` carries its SHA-256 to check (files version 1).
    package init(_ kind: Kind, header: FileHeader, file: OpenFile, name: String, digests: Bool, now: ContinuousClock.Instant) {
        self.kind = kind
        self.name = name
        lock = Guarded(Progress(lastChunk: now))
        size = header.size
        incoming = IncomingFile(file: file, header: header, name: name, digests: digests)
        reservation = switch kind {
        case .transfer(_, let upload): upload.reservation
        case .basefile: nil  // a basefile's reservation is given back when it is stored or discarded
        }
    }

    package var id: Int {
        switch kind {
        case .transfer(let request, _): request.id
        case .basefile(let request, _): request.id
        }
    }

    package var isBasefile: Bool {
        if case .basefile = kind { true } else { false }
    }

    /// Writes one chunk (reader thread).
    package func append(_ chunk: FileChunk, now: ContinuousClock.Instant) throws(ScanFailure) {
        try lock.withLock { (progress) throws(ScanFailure) in
            guard !progress.done else { return }
            progress.lastChunk = now
            try incoming.append(chunk)
        }
        reservation?.wrote(Int64(chunk.bytes.count))
    }

    /// Checks the end (reader thread): size, digest, then mode and time.
    package func finish(_ end: FileEnd) throws(ScanFailure) {
        try lock.withLock { (progress) throws(ScanFailure) in
            guard !progress.done else { throw ScanFailure(code: .cancelled, message: "cancelled") }
            try incoming.finish(end)
            // Only a file that arrived whole is done: one that failed is still to be discarded.
            progress.done = true
        }
    }

    /// Whether no chunk came for `bound`: a coordinator that announced a file and then sends
    /// none of it would otherwise hold its descriptor, place and free space for as long as it
    /// stays connected.
    package func isStalled(now: ContinuousClock.Instant, bound: Duration) -> Bool {
        lock.withLock { !$0.done && now - $0.lastChunk >= bound }
    }

    /// Gives up: the file closed, and what was readied for it undone (its task's directory or
    /// the partial basefile). Later calls do nothing.
    package func discard() {
        let first = lock.withLock { progress in
            defer { progress.done = true }
            return !progress.done
        }
        guard first else { return }
        lock.withLock { _ in incoming.discard() }
        switch kind {
        case .transfer(_, let upload): upload.discard()
        case .basefile(_, let upload): upload.discard()
        }
    }
}
