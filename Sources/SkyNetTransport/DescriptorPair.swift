import SkyNetRuntime
import Synchronization

/// A `ByteStream` over two descriptors that are not one socket: the pipes to a child's stdin
/// and stdout, or this process's own (`skynet node --stdio`).
///
/// A thread blocked in `read` or `write` on a pipe cannot be woken the way `shutdown` wakes
/// one on a socket, so no call here blocks in them: every wait is a `poll` that also watches a
/// wake pipe of the pair's own, which `shutdown` makes readable for good. Writes never wait
/// (so that `send(wait: false)` never blocks) without touching a description others share: a
/// socket is sent to with `MSG_DONTWAIT`; a pipe or terminal is opened again, non-blocking, as
/// a description of the pair's own (setting `O_NONBLOCK` on a terminal that is also stderr
/// made the log's writes fail, and a killed process left the flag behind). Unlike a socket's,
/// a shut-down write end reaches the peer as the end of its input only on `close`.
package final class DescriptorPair: ByteStream {
    package let reading: Int32
    package let writing: Int32
    private let readingWake: (read: Int32, write: Int32)
    private let writingWake: (read: Int32, write: Int32)
    /// How `writing` is written to without waiting.
    private let writeMode: WriteMode
    private enum WriteMode {
        /// `send` with `MSG_DONTWAIT`.
        case socket
        /// A description of our own with `O_NONBLOCK` (a pipe, a terminal), or a regular file,
        /// whose writes do not wait for a reader.
        case plain
        /// Only when a pipe could not be opened again: `O_NONBLOCK` on the shared description,
        /// and these flags back on `close`.
        case flagged(restoring: Int32)
    }

    private struct State {
        var receiveTimeout: Duration?
        var readingShut = false
        var writingShut = false
    }
    private let state = Locked(State())
    /// Bytes of `PipeCapacity`'s budget its pipes hold, given back on `close`.
    private let raisedPipes = Atomic<Int>(0)

    /// Takes over `reading` and `writing`: `close` closes them (once, when they are one).
    package init(reading: Int32, writing: Int32) throws(SocketError) {
        Socket.ignoreBrokenPipes()  // a pipe has no MSG_NOSIGNAL: a closed reader must mean EPIPE
        let first: (read: Int32, write: Int32), second: (read: Int32, write: Int32)
        do throws(ChildProcessError) {
            first = try ChildProcess.makePipe()
            do throws(ChildProcessError) { second = try ChildProcess.makePipe() } catch {
                closeDescriptor(first.read)
                closeDescriptor(first.write)
                throw error
            }
        } catch {
            throw SocketError("pipe", code: error.code)
        }
        raisedPipes.store(PipeCapacity.shared.raise([reading, writing]), ordering: .relaxed)
        self.reading = reading
        readingWake = first
        writingWake = second
        var info = stat()
        let kind = fstat(writing, &info) == 0 ? info.st_mode & S_IFMT : 0
        if kind == S_IFSOCK {
            (self.writing, writeMode) = (writing, .socket)
        } else if kind == S_IFIFO || kind == S_IFCHR {
            let own = open("/proc/self/fd/\(writing)", O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if own >= 0 {
                if writing != reading { closeDescriptor(writing) }  // one number is still the reading end
                (self.writing, writeMode) = (own, .plain)
            } else {
                let flags = fcntl(writing, F_GETFL, 0)
                _ = fcntl(writing, F_SETFL, flags | O_NONBLOCK)
                (self.writing, writeMode) = (writing, .flagged(restoring: flags))
            }
        } else {
            (self.writing, writeMode) = (writing, .plain)
        }
    }

    package func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int {
        let timeout = state.withLock { $0.receiveTimeout }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard try waitUntilReady(reading, for: Int16(POLLIN), unless: readingWake.read, deadline: deadline) else { return 0 }
            let count = read(reading, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR || errno == EAGAIN { continue }
            throw SocketError("read")
        }
    }

    /// Reads what has arrived without waiting (an event loop's read): nil when nothing has, 0
    /// at the end or once reading was shut down. A poll that does not wait comes first, so the
    /// read never blocks, and no flag is set on a description others may share (stdin).
    package func receiveNow(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int? {
        if state.withLock({ $0.readingShut }) { return 0 }
        var polled = pollfd(fd: reading, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&polled, 1, 0)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw SocketError("poll") }
            guard ready > 0 else { return nil }
            let count = read(reading, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN { return nil }
            throw SocketError("read")
        }
    }

    package func send(_ bytes: UnsafeRawBufferPointer, wait: Bool) throws(SocketError) -> Int {
        while true {
            if state.withLock({ $0.writingShut }) { throw SocketError("write", code: EPIPE) }
            let count = if case .socket = writeMode {
                sendWithoutWaiting(writing, bytes)
            } else {
                write(writing, bytes.baseAddress, bytes.count)
            }
            if count >= 0 { return count }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw SocketError("write") }
            guard wait else { return 0 }
            guard try waitUntilReady(writing, for: Int16(POLLOUT), unless: writingWake.read, deadline: nil) else {
                throw SocketError("write", code: EPIPE)
            }
        }
    }

    package func shutdown(reading: Bool, writing: Bool) {
        let wake = state.withLock { state -> [Int32] in
            var wake: [Int32] = []
            if reading && !state.readingShut { state.readingShut = true; wake.append(readingWake.write) }
            if writing && !state.writingShut { state.writingShut = true; wake.append(writingWake.write) }
            return wake
        }
        var byte: UInt8 = 1
        for fd in wake { _ = write(fd, &byte, 1) }  // an empty pipe takes a byte at once
    }

    package func setReceiveTimeout(_ timeout: Duration) {
        state.withLock { $0.receiveTimeout = timeout }
    }

    package func close() {
        PipeCapacity.shared.giveBack(raisedPipes.exchange(0, ordering: .relaxed))
        if case .flagged(let flags) = writeMode { _ = fcntl(writing, F_SETFL, flags) }
        for fd in Set([reading, writing, readingWake.read, readingWake.write, writingWake.read, writingWake.write]) {
            closeDescriptor(fd)
        }
    }

    /// Polls until `fd` is ready for `events` (true), `wake` is readable (false: shut down)
    /// or `deadline` passes (throws, as a socket's receive timeout does).
    private func waitUntilReady(_ fd: Int32, for events: Int16, unless wake: Int32, deadline: ContinuousClock.Instant?) throws(SocketError) -> Bool {
        var polled = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw SocketError("read", code: EAGAIN) }
                milliseconds = Int32(clamping: Int64((left.seconds * 1000).rounded(.up)))
            }
            let ready = poll(&polled, 2, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw SocketError("poll") }
            if polled[1].revents != 0 { return false }
            if polled[0].revents != 0 { return true }
        }
    }
}

/// The C library's `send` (which the class's own hides), never waiting and never raising SIGPIPE.
private func sendWithoutWaiting(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
    send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
    #else
    send(fd, bytes.baseAddress, bytes.count, MSG_DONTWAIT)
    #endif
}

/// The C library's `close`, which `DescriptorPair.close()` hides inside the class.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }

/// A `ByteStream` that can tell, without reading, that nobody can write to its input any more.
/// A `Connection` that holds back reading (back pressure) asks it, so that a peer that closed
/// its end ends the connection even though the bytes it sent before are never read.
///
/// A `Socket` is not one: TCP reports `POLLHUP` only once both ways are shut (a peer's
/// half-close is no hang-up), and a peer that closed with replies unread resets the
/// connection, which fails the blocked send of the replies instead.
package protocol InputHangUpReporting: ByteStream {
    /// Whether the input has hung up: no writer is left, though unread bytes may remain.
    func inputHasHungUp() -> Bool
}

extension DescriptorPair: InputHangUpReporting {
    /// A pipe reports `POLLHUP` once its last writer closed, unread bytes or not (a terminal
    /// once it hung up, a socket once its peer closed both ways); `POLLERR` is a broken input.
    /// A regular file or /dev/null reports neither: their end is a read of 0, as always.
    package func inputHasHungUp() -> Bool {
        var polled = pollfd(fd: reading, events: 0, revents: 0)  // POLLHUP and POLLERR need no asking
        while true {
            let ready = poll(&polled, 1, 0)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0 && polled.revents & Int16(POLLHUP | POLLERR) != 0
        }
    }
}
