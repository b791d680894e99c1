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

/// Reads a child's captured outputs to EOF on one thread of its own, with `poll`, keeping
/// what each output's bound allows, then closes them and fulfils `result`.
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

    /// Gives up reading `grace` from now if the outputs have not ended by then.
    func abandon(after grace: Duration) {
        let at = ContinuousClock.now + grace
        giveUpAt.withLock { $0 = min($0 ?? at, at) }
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
