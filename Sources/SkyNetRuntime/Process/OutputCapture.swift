/// The bytes a `.bytes` or `.tail` output held when it ended.
package struct CapturedBytes: Sendable, Equatable {
    package var bytes: [UInt8] = []
    /// `.bytes`: more than its limit arrived (reading stopped there and the child was killed).
    /// `.tail`: older bytes were dropped.
    package var overflowed = false

    package init(bytes: [UInt8] = [], overflowed: Bool = false) {
        self.bytes = bytes
        self.overflowed = overflowed
    }
}

/// What a child wrote to its captured outputs (`ChildProcess.Output.bytes` and `.tail`).
package struct CapturedOutput: Sendable, Equatable {
    package var stdout: CapturedBytes?
    package var stderr: CapturedBytes?
    /// Reading was given up (`ChildProcess.abandonOutput(after:)`) while some process still
    /// held an output open: what was read may be incomplete.
    package var abandoned = false

    package init(stdout: CapturedBytes? = nil, stderr: CapturedBytes? = nil, abandoned: Bool = false) {
        self.stdout = stdout
        self.stderr = stderr
        self.abandoned = abandoned
    }
}

/// Reads a child's captured outputs to EOF, keeping what each output's bound allows, then
/// closes them and fulfils `result`: on the process's event loops (`startOnLoops`), or, where
/// no pidfd tells the exit on a loop, on one thread of its own with `poll` (`run`).
final class OutputCapture: Sendable {
    struct Stream {
        let fd: Int32
        /// 1: stdout, 2: stderr.
        let number: Int32
        let limit: Int
        /// Keep the last `limit` bytes rather than fail past them.
        let keepsTail: Bool
    }

    let result = AsyncSignal<CapturedOutput>()
    /// When reading is to be given up, once the caller has decided (see `abandon(after:)`).
    private let giveUpAt = Locked<ContinuousClock.Instant?>(nil)
    /// What the loops have read so far (`startOnLoops`).
    private let gathered = Locked(Gathered())

    /// Gives up reading `grace` from now if the outputs have not ended by then.
    func abandon(after grace: Duration) {
        let at = ContinuousClock.now + grace
        giveUpAt.withLock { $0 = min($0 ?? at, at) }
        // Weak: a capture that ended goes with its child, not at the give-up time (a job's
        // grace), with its result's bytes.
        if gathered.withLock({ $0.onLoops && !$0.done }) { DeadlineTimer.shared.schedule(at: at) { [weak self] in self?.giveUp() } }
    }

    /// Runs on the capture thread. `overflow` runs (on it) when a `.bytes` output passes its
    /// limit; `exited` runs (on it) when `exitDescriptor`, a pidfd it then closes, polls readable.
    func run(_ streams: [Stream], exitDescriptor: Int32? = nil, exited: () -> Void = {}, overflow: () -> Void) {
        var exitDescriptor = exitDescriptor
        defer {
            // The outputs ended first (or were abandoned): the child still has to be reaped.
            if let fd = exitDescriptor {
                close(fd)
                exited()
            }
        }
        var open = streams
        var captured = Dictionary(streams.map { ($0.number, CapturedBytes()) }) { first, _ in first }
        var abandoned = false
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !open.isEmpty {
            let giveUp = giveUpAt.withLock { $0 }
            // Wake now and then only to notice a give-up time; data and EOF wake poll at once.
            var wait: Int32 = 200
            if let giveUp {
                let left = giveUp - .now
                if left <= .zero { abandoned = true; break }
                wait = min(wait, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1)
            }
            var polls = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            if let fd = exitDescriptor { polls.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&polls, nfds_t(polls.count), wait)
            if ready < 0, errno != EINTR { break }
            guard ready > 0 else { continue }
            if let fd = exitDescriptor, polls[open.count].revents != 0 {
                close(fd)
                exitDescriptor = nil
                exited()
            }
            var ended: Set<Int32> = []
            for (index, entry) in polls.prefix(open.count).enumerated() where entry.revents != 0 {
                let stream = open[index]
                let count = buffer.withUnsafeMutableBytes { read(stream.fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                guard count > 0 else { ended.insert(stream.fd); continue }
                var kept = captured[stream.number] ?? CapturedBytes()
                kept.bytes.append(contentsOf: buffer[0..<count])
                if kept.bytes.count > stream.limit {
                    kept.overflowed = true
                    if stream.keepsTail {
                        // Trim in batches: dropping the front on every read would be quadratic.
                        if kept.bytes.count > 2 * stream.limit { kept.bytes.removeFirst(kept.bytes.count - stream.limit) }
                    } else {
                        kept.bytes.removeLast(kept.bytes.count - stream.limit)
                        ended.insert(stream.fd)
                        overflow()
                    }
                }
                captured[stream.number] = kept
            }
            for fd in ended { close(fd) }
            open.removeAll { ended.contains($0.fd) }
        }
        for stream in open { close(stream.fd) }
        for stream in streams where stream.keepsTail {
            if let count = captured[stream.number]?.bytes.count, count > stream.limit {
                captured[stream.number]?.bytes.removeFirst(count - stream.limit)
            }
        }
        result.fulfil(CapturedOutput(stdout: captured[1], stderr: captured[2], abandoned: abandoned))
    }
}

/// Captured outputs read on the event loops: the reads' bytes are kept in chunks of up to 16
/// KiB and joined once at the end into an array of the exact size, so a result waiting its
/// turn (`--keep-order`) holds no spare capacity.
extension OutputCapture {
    struct Gathered {
        var onLoops = false
        var streams: [Stream] = []
        var chunks: [Int32: [[UInt8]]] = [:]
        var counts: [Int32: Int] = [:]
        var overflowed: Set<Int32> = []
        var readers: [Int32: PipeReader] = [:]
        /// A `.bytes` output passed its limit before its reader was registered.
        var stopWanted: Set<Int32> = []
        var open = 0
        var abandoned = false
        var done = false
    }

    /// Reads `streams` on the process's loops (a stream no loop can watch on a thread of its
    /// own); `overflow` runs when a `.bytes` output passes its limit.
    func startOnLoops(_ streams: [Stream], overflow: @escaping @Sendable () -> Void) {
        gathered.withLock { gathered in
            gathered.onLoops = true
            gathered.streams = streams
            gathered.open = streams.count
        }
        for stream in streams {
            let reader = EventLoop.readPipe(stream.fd, chunk: { [self] bytes in
                if !take(bytes, from: stream, overflow: overflow) { stopReading(stream.number) }
            }, end: { [self] in streamEnded() })
            if let reader {
                let stopNow = gathered.withLock { gathered -> Bool in
                    gathered.readers[stream.number] = reader
                    return gathered.stopWanted.contains(stream.number)
                }
                if stopNow { reader.stop() }
            } else {
                // No loop could watch it: a thread reads it (and a give-up cannot stop it).
                startThread(named: "skynet-child-output") { [self] in
                    readChunks(from: stream.fd) { [self] bytes in take(bytes, from: stream, overflow: overflow) }
                    close(stream.fd)
                    streamEnded()
                }
            }
        }
        if let at = giveUpAt.withLock({ $0 }) { DeadlineTimer.shared.schedule(at: at) { [weak self] in self?.giveUp() } }
    }

    /// Keeps `bytes` within the stream's bound; false when reading it is to stop (a `.bytes`
    /// output past its limit, whose child `overflow` kills).
    private func take(_ bytes: UnsafeRawBufferPointer, from stream: Stream, overflow: () -> Void) -> Bool {
        let number = stream.number
        let (keepReading, overflowedNow) = gathered.withLock { gathered -> (Bool, Bool) in
            if !stream.keepsTail, gathered.overflowed.contains(number) { return (false, false) }
            var chunks = gathered.chunks.removeValue(forKey: number) ?? []
            // Small reads are gathered into chunks of up to 16 KiB: a bounded count of arrays.
            if let last = chunks.indices.last, chunks[last].count + bytes.count <= 16 * 1024 {
                chunks[last].append(contentsOf: bytes)
            } else {
                chunks.append(Array(bytes))
            }
            var count = gathered.counts[number, default: 0] + bytes.count
            var result = (true, false)
            if count > stream.limit {
                gathered.overflowed.insert(number)
                if stream.keepsTail {
                    // Whole chunks go from the front while the rest still holds the limit.
                    while let first = chunks.first, count - first.count >= stream.limit {
                        count -= first.count
                        chunks.removeFirst()
                    }
                } else {
                    result = (false, true)
                }
            }
            gathered.chunks[number] = chunks
            gathered.counts[number] = count
            return result
        }
        if overflowedNow { overflow() }
        return keepReading
    }

    private func stopReading(_ number: Int32) {
        let reader = gathered.withLock { gathered -> PipeReader? in
            if gathered.readers[number] == nil { gathered.stopWanted.insert(number) }
            return gathered.readers[number]
        }
        reader?.stop()
    }

    /// The give-up time came: the outputs still open stop being read.
    private func giveUp() {
        let readers = gathered.withLock { gathered -> [PipeReader] in
            guard !gathered.done, gathered.open > 0 else { return [] }
            gathered.abandoned = true
            return Array(gathered.readers.values)
        }
        for reader in readers { reader.stop() }
    }

    /// One output ended; after the last, the result.
    private func streamEnded() {
        let finished = gathered.withLock { gathered -> CapturedOutput? in
            gathered.open -= 1
            guard gathered.open == 0, !gathered.done else { return nil }
            gathered.done = true
            // The readers' closures hold this capture: dropped, so that it (and the bytes its
            // result keeps) goes with its child.
            gathered.readers = [:]
            var output = CapturedOutput(abandoned: gathered.abandoned)
            for stream in gathered.streams {
                let chunks = gathered.chunks.removeValue(forKey: stream.number) ?? []
                var bytes = [UInt8]()
                bytes.reserveCapacity(min(gathered.counts[stream.number, default: 0], stream.limit))
                var left = gathered.counts[stream.number, default: 0]
                for chunk in chunks {
                    // A tail keeps its last `limit` bytes; `.bytes` its first.
                    if stream.keepsTail {
                        let skip = max(0, min(chunk.count, left - stream.limit))
                        bytes += chunk[skip...]
                        left -= skip
                    } else {
                        bytes += chunk.prefix(stream.limit - bytes.count)
                    }
                }
                let captured = CapturedBytes(bytes: bytes, overflowed: gathered.overflowed.contains(stream.number))
                if stream.number == 1 { output.stdout = captured } else { output.stderr = captured }
            }
            return output
        }
        if let finished { result.fulfil(finished) }
    }
}
