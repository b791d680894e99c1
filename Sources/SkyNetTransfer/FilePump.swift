import SkyNetAuth
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire
import SkyNetWork

/// Sends files over one connection, a chunk at a time, on a thread of its own (started when a
/// file is queued, gone when none is left): every blocking call of sending a file (open,
/// `pread`, `fstat`, waiting for room) happens there, never on the cooperative pool.
///
/// Files take turns one chunk each (a 1 GiB file does not hold back the 4 MiB ones). A chunk
/// goes out only while the connection queues fewer than `window` bytes, so at most the window
/// plus one line (~342 KiB) is ever queued, under a node's `pauseReadingAbove` (1 MiB): a
/// peer that streams files back never stops reading ours. After its last byte a file is looked
/// at again: another size or time, or a byte beyond, is `file-changed` and no `end` is sent.
/// The queue is behind a lock (`Locked`); a file in progress is the pump thread's alone.
package final class FilePump: Sendable {
    /// The most bytes queued on the connection before the pump waits (512 KiB).
    static let window = 512 << 10

    private struct State {
        /// How the link's files travel (`use`): taken by each file as it starts.
        var format = FileFormat.checked
        var queued: [OutgoingFile] = []
        var running = false
        var stopped = false
    }

    private let connection: Connection
    private let state = Locked(State())

    package init(connection: Connection) {
        self.connection = connection
    }

    /// Sends the files that start from now on in `format`: the link's, once its welcome named
    /// the file version.
    package func use(_ format: FileFormat) {
        state.withLock { $0.format = format }
    }

    /// How the link's files travel, both ways (`use`): what a receiver of its files checks.
    package var format: FileFormat { state.withLock { $0.format } }

    /// Queues `file`; its `done` is called once, from the pump's thread (or here, at once,
    /// when the pump was stopped).
    package func enqueue(_ file: OutgoingFile) {
        let (start, refused) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopped else { return (false, true) }
            state.queued.append(file)
            defer { state.running = true }
            return (!state.running, false)
        }
        if refused { return file.done(.failure(Self.closed)) }
        if start { startThread(named: "skynet-pump") { [self] in run() } }
    }

    /// Fails every queued file at once and every file in progress at its next chunk; later
    /// files fail as they are queued. For the connection's end.
    package func stop() {
        let queued = state.withLock { state -> [OutgoingFile] in
            state.stopped = true
            defer { state.queued = [] }
            return state.queued
        }
        for file in queued { file.done(.failure(Self.closed)) }
    }

    /// How a file fails when its connection closed (or the pump was stopped) before its end.
    package static let closed = ScanFailure(code: .taskFailed, message: "the connection closed while a file was being sent")

    /// The pump thread: takes queued files, sends a chunk of each in turn, ends when none is left.
    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxChunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        var active: [Sending] = []
        while true {
            let (new, stopped, format) = state.withLock { state -> ([OutgoingFile], Bool, FileFormat) in
                defer { state.queued = [] }
                if state.queued.isEmpty, active.isEmpty { state.running = false }
                return (state.queued, state.stopped, state.format)
            }
            if stopped {
                for sending in active { sending.fail(Self.closed) }
                for file in new { file.done(.failure(Self.closed)) }
                return state.withLock { $0.running = false }
            }
            if new.isEmpty, active.isEmpty { return }
            active += new.compactMap { Sending(start: $0, format: format, connection: connection) }
            // One turn: a chunk of each file; those that finished or failed leave.
            active = active.filter { $0.sendNext(over: connection, window: Self.window, buffer: buffer) }
        }
    }
}

/// One file being sent, on the pump's thread only.
private final class Sending {
    let file: OutgoingFile
    let format: FileFormat
    let handle: OpenFile
    let status: FileStatus
    var offset: Int64 = 0
    /// nil: the link needs no digest (files version 2), and none is computed.
    var hasher: SHA256?

    /// Opens the file, checks it and sends its header; nil when it failed (its `done` called).
    init?(start file: OutgoingFile, format: FileFormat, connection: Connection) {
        self.file = file
        self.format = format
        hasher = format.digests ? SHA256() : nil
        do throws(ScanFailure) {
            handle = try file.open()
        } catch {
            file.done(.failure(error))
            return nil
        }
        do {
            status = try handle.status()
        } catch {
            handle.close()
            file.done(.failure(ScanFailure(code: .taskFailed, message: "cannot read \(file.name): \(error)")))
            return nil
        }
        guard status.size <= file.maxSize else {
            handle.close()
            // Over this side's own bound a coordinator's file is given up for good; over a
            // node's smaller bound, or a node's return over the scan's, it may run elsewhere.
            let bound = file.limitName ?? "\(file.limitOwner.map { "\($0)'s" } ?? "the") --max-file-size"
            file.done(.failure(ScanFailure(code: .fileTooLarge,
                                           message: "\(file.name) is \(Sending.size(status.size)), over \(bound) \(Sending.size(file.maxSize))",
                                           isFinal: file.file == nil && file.limitOwner == nil)))
            return nil
        }
        guard !file.isCancelled() else {
            handle.close()
            file.done(.failure(ScanFailure(code: .cancelled, message: "cancelled")))
            return nil
        }
        let header = FileHeader(size: status.size, mode: status.mode, mtimeNanoseconds: status.mtimeNanoseconds)
        if let line = file.header(header) {
            do { try connection.send(line) } catch {
                handle.close()
                file.done(.failure(FilePump.closed))
                return nil
            }
        }
    }

    /// Sends the next chunk (or, after the last, checks the file and sends its `end`); false
    /// once the file is done either way.
    func sendNext(over connection: Connection, window: Int, buffer: UnsafeMutableRawBufferPointer) -> Bool {
        if file.isCancelled() { return fail(ScanFailure(code: .cancelled, message: "cancelled")) }
        let left = status.size - offset
        guard left > 0 else { return finish(over: connection, buffer: buffer) }
        let wanted = Int(min(Int64(buffer.count), left))
        let count: Int
        do { count = try handle.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]), at: offset) } catch {
            return fail(ScanFailure(code: .taskFailed, message: "cannot read \(file.name): \(error)"))
        }
        guard count == wanted else { return fail(changed("its size shrank to \(offset + Int64(count)) while it was being sent")) }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
        hasher?.update(bytes)
        let line = FileChunk.message(format, id: file.id, file: file.file, offset: offset, bytes: bytes)
        guard connection.waitForRoom(below: window), (try? connection.send(line)) != nil else { return fail(FilePump.closed) }
        offset += Int64(count)
        file.afterChunk?(offset)
        return true
    }

    /// After the last byte: the same size and time, nothing beyond, then `end`.
    private func finish(over connection: Connection, buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let now = try? handle.status() else { return fail(changed("it could not be looked at again")) }
        guard now.size == status.size else { return fail(changed("size \(status.size) → \(now.size)")) }
        guard now.mtimeNanoseconds == status.mtimeNanoseconds else { return fail(changed("its modification time moved")) }
        let beyond = (try? handle.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<1]), at: status.size)) ?? 0
        guard beyond == 0 else { return fail(changed("it grew past \(status.size) bytes")) }
        handle.close()
        let digest = hasher?.finalize()
        guard (try? connection.send(FileEnd(id: file.id, file: file.file, sha256: digest).line)) != nil else {
            file.done(.failure(FilePump.closed))
            return false
        }
        file.done(.success(()))
        return false
    }

    private func changed(_ how: String) -> ScanFailure {
        ScanFailure(code: .fileChanged, message: "\(file.name) changed while it was being sent (\(how))")
    }

    /// Ends the file with `failure` (no `end` is sent); false, for `sendNext`.
    @discardableResult
    func fail(_ failure: ScanFailure) -> Bool {
        handle.close()
        file.done(.failure(failure))
        return false
    }

    /// A size as a person reads it: `2.0 GiB`, `40 MiB`, `512 KiB`, `12 bytes`.
    static func size(_ bytes: Int64) -> String {
        let units: [(Int64, String)] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        for (unit, name) in units where bytes >= unit {
            let value = Double(bytes) / Double(unit)
            return value == value.rounded() ? "\(Int(value)) \(name)" : "\(String(cFormat: "%.1f", value)) \(name)"
        }
        return "\(bytes) bytes"
    }
}
