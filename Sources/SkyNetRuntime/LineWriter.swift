/// Output to descriptors (a terminal, a pipe, a file) through one bounded queue that a thread
/// of its own drains with blocking `write`s.
///
/// `write` returns as soon as the text is queued; when the queue is full it suspends the
/// caller (no pool thread blocks, no line is dropped) until the thread has made room. One
/// queue for stdout and stderr keeps their order on a shared terminal: what was accepted
/// first is written first. A descriptor that fails (a closed pipe, a full disk) drops what
/// follows for it instead of failing the program; `failure(of:)` and `failureSignal(of:)`
/// say so to whoever must report it. The queue, the waiting producers and the flush waiters
/// are guarded by one lock (`Guarded`), on whose condition the thread waits for work.
///
/// `offer` never waits: it queues a line only if there is room now. Its counting form drops
/// and counts what does not fit, and says how many when room returns (logs of a server,
/// which a reader that stopped reading must never stop).
package final class LineWriter: Sendable {
    /// Text for one descriptor.
    package struct Piece: Sendable {
        package let descriptor: Int32
        package let bytes: [UInt8]
        /// When set, the piece is left out if that descriptor has failed by the time the
        /// writer thread comes to it: a record that earlier pieces reached it (the journal's
        /// `printed` marks after stdout's results) is written only when they did.
        package let onlyIfWritten: Int32?

        package init(_ text: String, to descriptor: Int32) {
            self.init(bytes: Array(text.utf8), to: descriptor)
        }

        package init(bytes: [UInt8], to descriptor: Int32, onlyIfWritten other: Int32? = nil) {
            self.descriptor = descriptor
            self.bytes = bytes
            onlyIfWritten = other
        }
    }

    private struct Producer {
        let pieces: [Piece]
        let condition: (@Sendable () -> Bool)?
        let continuation: CheckedContinuation<Void, Never>
    }

    /// Who waits for room, oldest first: a producer with its pieces, or the notice of a
    /// descriptor's counted drops (made with the count when it is queued). A notice waits in
    /// line like a producer, so that nothing newer for its descriptor goes before it.
    private enum Waiting {
        case producer(Producer)
        case notice(Int32)
    }

    /// Lines `offer(_:to:countingDropsAs:)` dropped for one descriptor, and how to say so.
    private struct Drops {
        var count = 0
        let notice: @Sendable (Int) -> String
    }

    private struct State {
        var queue: [[Piece]] = []
        /// Bytes accepted and not yet written (the batch being written included).
        var queuedBytes = 0
        var blocked: [Waiting] = []
        /// Records accepted so far / written (or dropped) so far.
        var accepted = 0
        var written = 0
        /// Conditional records dropped while they waited (flush targets counted them).
        var dropped = 0
        var flushWaiters: [(upTo: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var failed: Set<Int32> = []
        /// Why each failed descriptor failed (its errno), for whoever must report it.
        var failures: [Int32: Int32] = [:]
        /// Fulfilled with a descriptor's errno when it fails (made on request, one a descriptor).
        var failureSignals: [Int32: AsyncSignal<Int32>] = [:]
        /// Counted drops per descriptor whose notice is not queued yet.
        var drops: [Int32: Drops] = [:]
        var threadStarted = false

        func fits(_ size: Int, capacity: Int) -> Bool {
            queuedBytes == 0 || queuedBytes + size <= capacity  // a record larger than the queue goes alone
        }
    }

    /// The most bytes queued before producers wait.
    package let capacity: Int
    /// A piece this long is written on its own rather than gathered with its neighbours: the
    /// copy would cost more than the extra `write`, and would double a big record's memory.
    static let directWrite = 64 * 1024
    private let state = Guarded(State())

    package init(capacity: Int = 64 * 1024) {
        self.capacity = max(1, capacity)
    }

    /// Queues `text` for `descriptor`, suspending while the queue is full.
    package func write(_ text: String, to descriptor: Int32) async {
        await write([Piece(text, to: descriptor)])
    }

    /// Queues pieces that are written together, in order, with nothing between them.
    ///
    /// `condition`, if given, is asked under the queue's lock at the moment the pieces would
    /// be accepted (after any wait for room); when it says no, they are dropped. A gate that
    /// closes before a last line is queued thus keeps every later conditional line out.
    package func write(_ pieces: [Piece], if condition: (@Sendable () -> Bool)? = nil) async {
        let size = pieces.reduce(0) { $0 + $1.bytes.count }
        guard size > 0 else { return }
        // When there is room the pieces are taken without suspending: a continuation resumed
        // at once still costs the task a trip through the executor, once per line.
        guard !state.withLock({ acceptIfRoom(pieces, size: size, condition: condition, into: &$0) }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let accepted = state.withLock { state -> Bool in
                if acceptIfRoom(pieces, size: size, condition: condition, into: &state) { return true }
                state.blocked.append(.producer(Producer(pieces: pieces, condition: condition, continuation: continuation)))
                return false
            }
            if accepted { continuation.resume() }
        }
    }

    /// Takes the pieces (or drops them, when `condition` says no) if there is room and nobody
    /// waits ahead of them (order is kept); false when they must wait.
    private func acceptIfRoom(_ pieces: [Piece], size: Int, condition: (@Sendable () -> Bool)?, into state: inout State) -> Bool {
        guard state.blocked.isEmpty, state.fits(size, capacity: capacity) else { return false }
        if condition?() ?? true { accept(pieces, size: size, into: &state) }
        return true
    }

    /// Queues `text` only if there is room right now (for output that may be skipped, such
    /// as a progress line about to be redrawn anyway); never waits. Whether it was queued.
    @discardableResult
    package func offer(_ text: String, to descriptor: Int32) -> Bool {
        let piece = Piece(text, to: descriptor)
        return state.withLock { acceptIfRoom([piece], size: piece.bytes.count, condition: nil, into: &$0) }
    }

    /// Queues `text` for `descriptor` if there is room right now; otherwise drops it and
    /// counts it. Never waits: for logs written from threads that must not (an accept loop, a
    /// reader thread, a pool thread), where a stalled reader must cost log lines, never
    /// service. As soon as room returns (at the next offer, or once the writer thread has
    /// written what it held), one line made by `notice(count)` is queued before anything newer
    /// for that descriptor: the lines written keep their order, and the gap is stated. Whether
    /// `text` was queued.
    @discardableResult
    package func offer(_ text: String, to descriptor: Int32, countingDropsAs notice: @escaping @Sendable (Int) -> String) -> Bool {
        let piece = Piece(text, to: descriptor)
        return state.withLock { state in
            queueLeadingNotices(into: &state)
            if acceptIfRoom([piece], size: piece.bytes.count, condition: nil, into: &state) { return true }
            if state.drops[descriptor] == nil { state.blocked.append(.notice(descriptor)) }
            state.drops[descriptor, default: Drops(notice: notice)].count += 1
            return false
        }
    }

    /// Queues the drop notices at the head of the line while they fit (a producer ahead of
    /// one came first: the writer thread lets it in before).
    private func queueLeadingNotices(into state: inout State) {
        while case .notice(let descriptor)? = state.blocked.first {
            guard let drops = state.drops[descriptor] else {
                state.blocked.removeFirst()
                continue
            }
            let piece = Piece(drops.notice(drops.count), to: descriptor)
            guard state.fits(piece.bytes.count, capacity: capacity) else { break }
            state.blocked.removeFirst()
            state.drops[descriptor] = nil
            accept([piece], size: piece.bytes.count, into: &state)
        }
    }

    /// Why writing to `descriptor` failed (what follows for it is dropped), if it did.
    package func failure(of descriptor: Int32) -> String? {
        state.withLock { $0.failures[descriptor] }.map { String(cString: strerror($0)) }
    }

    /// Fulfilled with the errno of the first failed write to `descriptor` (at once if one
    /// failed already): a scan stops on it when its stdout fails.
    package func failureSignal(of descriptor: Int32) -> AsyncSignal<Int32> {
        let (signal, failed) = state.withLock { state -> (AsyncSignal<Int32>, Int32?) in
            let signal = state.failureSignals[descriptor] ?? AsyncSignal<Int32>()
            state.failureSignals[descriptor] = signal
            return (signal, state.failures[descriptor])
        }
        if let failed { signal.fulfil(failed) }
        return signal
    }

    /// Notices at once when the reader of a pipe on `descriptor` goes away (`| head -n1` has
    /// read what it wanted), without waiting for the next write to find out: the descriptor
    /// then fails with `EPIPE`, as that write would. A thread of its own waits for it in
    /// `poll` (a pipe's write end reports `POLLERR` once it has no reader); nothing is watched
    /// when `descriptor` is not a pipe. The thread lasts until then: call it once a process.
    package func watchReader(of descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
        startThread(named: "skynet-reader-watch") { [self] in
            // Asking for no event: only POLLERR/POLLHUP (always reported) end the wait.
            var entry = pollfd(fd: descriptor, events: 0, revents: 0)
            while poll(&entry, 1, -1) < 0, errno == EINTR {}
            guard entry.revents & Int16(POLLERR | POLLHUP) != 0 else { return }
            markFailed(descriptor, errno: EPIPE)
        }
    }

    /// Records that `descriptor` failed with `code` (unless it failed before): what is queued
    /// for it, and what follows, is dropped.
    private func markFailed(_ descriptor: Int32, errno code: Int32) {
        let signal = state.withLock { state -> AsyncSignal<Int32>? in
            state.failed.insert(descriptor)
            if state.failures[descriptor] == nil { state.failures[descriptor] = code }
            return state.failureSignals[descriptor]
        }
        signal?.fulfil(code)
    }

    /// Waits until everything queued (or waiting to be) before the call has been written.
    package func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                let target = state.accepted + state.dropped + state.blocked.count  // notices too
                guard state.written + state.dropped < target else { return true }
                state.flushWaiters.append((target, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func accept(_ pieces: [Piece], size: Int, into state: inout State) {
        if !state.threadStarted {
            state.threadStarted = true
            startThread(named: "skynet-writer") { [self] in drain() }
        }
        state.accepted += 1
        state.queue.append(pieces)
        state.queuedBytes += size
    }

    /// The writer thread: takes what is queued, writes it, makes room, wakes who waited.
    ///
    /// Pieces in a row for one descriptor go out in one `write`. When the last batch ended
    /// less than `pace` ago the thread lets lines gather for the rest of it first: at tens of
    /// thousands of lines a second that is a write and a wake-up per millisecond rather than
    /// per line, and a lone line after a quiet spell still goes out at once.
    private func drain() {
        let clock = ContinuousClock(), pace = Duration.milliseconds(1)
        var lastBatch = clock.now - pace
        var buffer: [UInt8] = []
        while true {
            let sinceLast = clock.now - lastBatch
            if sinceLast < pace { sleepOnThisThread(for: pace - sinceLast) }
            let (batch, failed) = state.wait(while: { $0.queue.isEmpty }) { state, _ in
                defer { state.queue = [] }
                return (state.queue, state.failed)
            }
            var failedNow = failed
            var reasons: [Int32: Int32] = [:]
            // Writes `bytes` unless the descriptor failed already; remembers a failure.
            func send(_ bytes: [UInt8], to descriptor: Int32) {
                guard !bytes.isEmpty, !failedNow.contains(descriptor) else { return }
                if !bytes.withUnsafeBytes({ writeFully($0, to: descriptor) }) {
                    failedNow.insert(descriptor)
                    reasons[descriptor] = errno
                }
            }
            var pieces = batch.joined().makeIterator(), next = pieces.next()
            while let first = next {
                // Gather the run of pieces for the same descriptor; a big piece (a held
                // result) is written from its own buffer, never copied into this one.
                buffer.removeAll(keepingCapacity: true)
                while let piece = next, piece.descriptor == first.descriptor {
                    if let other = piece.onlyIfWritten, failedNow.contains(other) {
                        // Pieces before this one went out in earlier runs: their failure is known.
                        next = pieces.next()
                        continue
                    }
                    if piece.bytes.count >= Self.directWrite {
                        send(buffer, to: first.descriptor)
                        buffer.removeAll(keepingCapacity: true)
                        send(piece.bytes, to: first.descriptor)
                    } else {
                        buffer += piece.bytes
                    }
                    next = pieces.next()
                }
                send(buffer, to: first.descriptor)
            }
            if buffer.capacity > 1 << 20 { buffer = [] }  // a huge record's buffer is not kept
            lastBatch = clock.now
            let size = batch.joined().reduce(0) { $0 + $1.bytes.count }
            let (woken, failedSignals) = state.withLock { state in
                state.written += batch.count
                state.queuedBytes -= size
                state.failed.formUnion(failedNow)
                state.failures.merge(reasons) { first, _ in first }
                let failedSignals = reasons.keys.compactMap { descriptor in
                    state.failureSignals[descriptor].map { ($0, state.failures[descriptor] ?? 0) }
                }
                var woken: [CheckedContinuation<Void, Never>] = []
                // Room has returned: let in who waited, in order, notices of what was lost too.
                queueLeadingNotices(into: &state)
                while case .producer(let first)? = state.blocked.first {
                    let size = first.pieces.reduce(0) { $0 + $1.bytes.count }
                    guard state.fits(size, capacity: capacity) else { break }
                    state.blocked.removeFirst()
                    if first.condition?() ?? true {
                        accept(first.pieces, size: size, into: &state)
                    } else {
                        state.dropped += 1  // counts as written for flush waiters
                    }
                    woken.append(first.continuation)
                    queueLeadingNotices(into: &state)
                }
                let written = state.written + state.dropped
                woken += state.flushWaiters.filter { $0.upTo <= written }.map(\.continuation)
                state.flushWaiters.removeAll { $0.upTo <= written }
                return (woken, failedSignals)
            }
            // Before the flush waiters resume: who flushed then finds the failure signalled.
            for (signal, code) in failedSignals { signal.fulfil(code) }
            for continuation in woken { continuation.resume() }
        }
    }
}

/// Writes all of `bytes` to `descriptor` with blocking `write`s (retrying after a signal);
/// false when the descriptor fails (a closed pipe, say). Only for threads of our own or for
/// synchronous callers about to exit: never call it from the cooperative pool.
package func writeFully(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    var offset = 0
    while offset < bytes.count {
        #if canImport(Glibc)
        let count = Glibc.write(descriptor, base + offset, bytes.count - offset)
        #else
        let count = Darwin.write(descriptor, base + offset, bytes.count - offset)
        #endif
        if count > 0 {
            offset += count
        } else if count < 0, errno == EINTR {
            continue
        } else {
            return false
        }
    }
    return true
}

/// Reads `descriptor` with blocking `read`s of up to `chunkSize` bytes (retrying after a
/// signal), handing each chunk to `body` until the end, a failed read, or `body` returns
/// false. Only for threads of our own: never call it from the cooperative pool.
package func readChunks(from descriptor: Int32, chunkSize: Int = 64 * 1024, _ body: (UnsafeRawBufferPointer) -> Bool) {
    var buffer = [UInt8](repeating: 0, count: chunkSize)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0, buffer.withUnsafeBytes({ body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { return }
    }
}
