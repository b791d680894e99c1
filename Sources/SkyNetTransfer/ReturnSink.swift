import SkyNetRuntime
import SkyNetWire
import SkyNetWork

/// Receives the files one transfer request returns (`return`, `data`, `end` for its id, on the
/// link's reader thread) and writes each only at `targets[file]`: the local paths the task's
/// plan gives, in the request's `returns` order. No path comes from the node, only an index.
///
/// The node sends the files in order, one at a time, then its `result`. Anything else (an index
/// out of order, unknown or repeated, bytes out of order or beyond the size, a wrong digest)
/// fails the request through `onFailure` and removes every `.part` of the task: nothing else
/// is touched. `commit` (once the `result` came) renames every file into place; `discard`
/// (any failure, a lost link) leaves nothing behind. State behind a lock (`Locked`): the reader
/// thread writes, the blocking pool commits or discards.
package final class ReturnSink: ReplyStream {
    private struct State: Sendable {
        /// The files whose `end` came and checked, in order.
        var done: [ReturnWriter] = []
        /// The file arriving now.
        var current: ReturnWriter?
        /// Why the request failed, once it has: later lines are dropped.
        var failure: ScanFailure?
        /// Committed or discarded: nothing more is written.
        var closed = false
    }

    /// Where each returned file is written, by its index in the request's `returns`.
    let targets: [TransferPath]
    private let peer: String
    private let maxSize: Int64
    private let digests: ReturnDigests
    private let roots: ReturnRoots
    private let freeSpace: @Sendable (DirectoryHandle) throws -> Int64
    private let onFailure: @Sendable (ScanFailure) -> Void
    /// Told of every line of the stream: the returns' progress, which restarts their bound.
    private let onLine: @Sendable () -> Void
    private let state = Locked(State())

    package init(targets: [TransferPath], peer: String, maxSize: Int64, roots: ReturnRoots,
         digests: ReturnDigests = ReturnDigests(check: true, keep: true),
         freeSpace: @escaping @Sendable (DirectoryHandle) throws -> Int64 = { try $0.freeBytes() },
         onLine: @escaping @Sendable () -> Void = {}, onFailure: @escaping @Sendable (ScanFailure) -> Void) {
        self.onLine = onLine
        self.targets = targets
        self.peer = peer
        self.maxSize = maxSize
        self.digests = digests
        self.roots = roots
        self.freeSpace = freeSpace
        self.onFailure = onFailure
    }

    /// One line of the request's stream (reader thread). Lines of other kinds are ignored.
    package func receive(_ reply: Reply) {
        onLine()
        let failure = state.withLock { state -> ScanFailure? in
            guard !state.closed, state.failure == nil else { return nil }
            do throws(ScanFailure) {
                try take(reply, into: &state)
                return nil
            } catch {
                Self.discardAll(&state)
                state.failure = error
                return error
            }
        }
        if let failure { onFailure(failure) }
    }

    private func take(_ reply: Reply, into state: inout State) throws(ScanFailure) {
        switch reply {
        case .returnFile(let header):
            let next = state.done.count
            guard state.current == nil, header.file == next, next < targets.count else {
                throw ScanFailure(code: .badReply, message: "\(peer) sent returned file \(header.file) out of turn (expected \(next < targets.count ? "file \(next)" : "no more files") of \(targets.count))")
            }
            state.current = try ReturnWriter(target: targets[next], header: header.header, maxSize: maxSize, peer: peer,
                                              roots: roots, digests: digests, freeSpace: freeSpace)
        case .chunk(let chunk):
            guard var writer = state.current, chunk.file == state.done.count else {
                throw ScanFailure(code: .badReply, message: "\(peer) sent bytes of a returned file it did not announce")
            }
            state.current = nil  // the writer is back in the state below, or discarded by the caller
            do {
                try writer.append(chunk, peer: peer)
            } catch {
                writer.discard()
                throw error
            }
            state.current = writer
        case .fileEnd(let end):
            guard var writer = state.current, end.file == state.done.count else {
                throw ScanFailure(code: .badReply, message: "\(peer) ended a returned file it did not announce")
            }
            state.current = nil
            do {
                _ = try writer.finish(end, peer: peer)
            } catch {
                writer.discard()
                throw error
            }
            state.done.append(writer)
        default:
            break
        }
    }

    /// Renames every returned file into place (the request's `result` came) and returns them
    /// for the journal. Throws the request's failure, or `bad-reply` when the node answered
    /// before sending every file; then nothing is left behind. Blocks: a thread of our own.
    package func commit() throws(ScanFailure) -> [ReturnedFile] {
        try state.withLock { (state) throws(ScanFailure) -> [ReturnedFile] in
            guard !state.closed else { throw ScanFailure(code: .badReply, message: "the returned files were already handled") }
            if let failure = state.failure { throw failure }
            guard state.current == nil, state.done.count == targets.count else {
                let missing = targets[min(state.done.count, targets.count - 1)]
                Self.discardAll(&state)
                throw ScanFailure(code: .badReply, message: "\(peer) answered before sending \(missing)")
            }
            state.closed = true
            var files: [ReturnedFile] = []
            for index in state.done.indices {
                do throws(ScanFailure) {
                    try state.done[index].commit()
                } catch {
                    for rest in state.done.indices where rest > index { state.done[rest].discard() }
                    throw error
                }
                let writer = state.done[index]
                files.append(writer.returned)
            }
            return files
        }
    }

    /// Removes every `.part` of the task and drops later lines (a failure, a lost link).
    package func discard() {
        state.withLock { state in
            Self.discardAll(&state)
            state.closed = true
        }
    }

    private static func discardAll(_ state: inout State) {
        state.current?.discard()
        state.current = nil
        for index in state.done.indices { state.done[index].discard() }
        state.done = []
    }
}
