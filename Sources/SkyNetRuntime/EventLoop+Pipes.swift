/// Reading a pipe to its end, and waiting for a child's exit, on the process's event loops
/// rather than on a thread each: ssh's stderr and a child's reaping cost no thread per link.
extension EventLoop {
    /// Reads the pipe `descriptor` (the read end this process alone holds: it is made
    /// non-blocking) on one of the process's loops until its end. `chunk` gets what each read
    /// brings and `end` runs once, after the last chunk; both on the loop's thread, one at a
    /// time, and they must not block. The descriptor is closed after `end`. Nil when no loop
    /// can watch it (out of descriptors): the caller reads it another way, and closes it.
    /// `PipeReader.stop` ends the reading early.
    @discardableResult
    package static func readPipe(_ descriptor: Int32, chunk: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
                                 end: @escaping @Sendable () -> Void) -> PipeReader? {
        guard let loop = try? shared.next() else { return nil }
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        let reading = PipeReading(descriptor: descriptor, loop: loop, chunk: chunk, end: end)
        do {
            let watch = try loop.watch(descriptor, for: .readable) { _ in reading.readable() }
            loop.execute { reading.started(watch) }
            return PipeReader(reading: reading)
        } catch {
            _ = fcntl(descriptor, F_SETFL, flags)
            return nil
        }
    }

    /// Runs `exited` on one of the process's loops once the process of `pidfd` (a pidfd, which
    /// polls readable when its process exits) has exited; closes the pidfd then. False when no
    /// loop can watch it: the caller waits another way, and closes it.
    package static func whenExited(pidfd: Int32, _ exited: @escaping @Sendable () -> Void) -> Bool {
        guard let loop = try? shared.next() else { return false }
        let once = Locked<Watch?>(nil)
        do {
            let watch = try loop.watch(pidfd, for: .readable) { _ in
                // Once: the loop's thread runs handlers one at a time, and the first takes it.
                guard let watch = once.withLock({ state -> Watch? in defer { state = nil }; return state }) else { return }
                watch.cancel()
                _ = close(pidfd)
                exited()
            }
            // Set on the loop's thread, before any call of the handler can look.
            loop.execute { once.withLock { $0 = watch } }
            return true
        } catch {
            return false
        }
    }
}

/// A pipe being read on a loop (`EventLoop.readPipe`).
package final class PipeReader: Sendable {
    fileprivate let reading: PipeReading

    fileprivate init(reading: PipeReading) {
        self.reading = reading
    }

    /// Ends the reading now, from any thread: no chunk comes after it runs on the loop; the
    /// descriptor is closed and `end` runs (once: nothing happens when the pipe had ended).
    package func stop() {
        reading.loop.execute { [reading] in reading.stop() }
    }
}

/// One pipe read on a loop to its end. Unchecked: every `var` is touched only on the loop's
/// thread (the watch's handler and the start job, which the loop runs one at a time).
private final class PipeReading: @unchecked Sendable {  // safe without a lock: only the loop's one thread touches it
    private let descriptor: Int32
    fileprivate let loop: EventLoop
    private let chunk: @Sendable (UnsafeRawBufferPointer) -> Void
    private let end: @Sendable () -> Void
    private var watch: EventLoop.Watch?
    private var ended = false

    init(descriptor: Int32, loop: EventLoop, chunk: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
         end: @escaping @Sendable () -> Void) {
        self.descriptor = descriptor
        self.loop = loop
        self.chunk = chunk
        self.end = end
    }

    func started(_ watch: EventLoop.Watch) {
        self.watch = watch
        if stopAsked { return stop() }
        readable()
    }

    /// Asked before the start job ran: it stops once it has the watch.
    private var stopAsked = false

    func stop() {
        guard let watch else {
            stopAsked = true
            return
        }
        guard !ended else { return }
        ended = true
        watch.cancel()
        _ = close(descriptor)
        end()
    }

    /// Reads what is there (a few reads at most: the loop's other descriptors wait), to the end.
    func readable() {
        guard let watch, !ended else { return }
        let buffer = loop.scratch.bytes
        for _ in 0..<4 {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count > 0 {
                chunk(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            // The end, or a read that failed: either way nothing more comes.
            ended = true
            watch.cancel()
            _ = close(descriptor)
            end()
            return
        }
    }
}
