import SkyNetRuntime
import SkyNetTransport

/// The end of a connection that does not lose what we sent: our side is shut, then what the
/// client still sends is read and dropped (at most 64 KiB) until it closes its side or the
/// deadline passes, whichever comes first. Closing with unread bytes would reset the
/// connection, and the reset can destroy a response the client has not read yet. The bounds
/// are on the whole drain: a client trickling a byte at a time cannot keep it (or a server's
/// `stop`) waiting. It runs on an event loop: no thread waits for the client.
///
/// Unchecked: every `var` is touched only on the loop's thread (the watch's handler and the
/// jobs given to `loop.execute`).
final class SocketDrain: @unchecked Sendable {  // safe without a lock: only the loop's one thread touches it
    let socket: Socket
    let loop: EventLoop
    private let onFinish: @Sendable () -> Void
    private var watch: EventLoop.Watch?
    private var ticket: TimerTicket?
    private var drained = 0
    private var finished = false
    static let maxDrained = 64 * 1024

    /// `onFinish` runs once, on the loop's thread, when the drain is over; the socket is the
    /// caller's to close then (the drain never closes it).
    init(socket: Socket, loop: EventLoop, onFinish: @escaping @Sendable () -> Void) {
        self.socket = socket
        self.loop = loop
        self.onFinish = onFinish
    }

    /// Shuts our side and starts draining on the loop; callable from any thread. The socket
    /// must not be watched by anyone else on its loop.
    func start(deadline: Duration) {
        let end = ContinuousClock.now + deadline
        loop.execute { [self] in
            guard !finished else { return }  // cut before it started: the socket may be closed
            socket.shutdown(reading: false, writing: true)
            do {
                watch = try loop.watch(socket.descriptor, for: .readable) { [self] _ in readable() }
            } catch {
                return finish()  // no room to watch it: close now rather than never
            }
            ticket = DeadlineTimer.shared.schedule(at: end) { [self] in
                loop.execute { [self] in finish() }
            }
        }
    }

    /// Ends the drain now (a server stopping); callable from any thread.
    func cut() {
        loop.execute { [self] in finish() }
    }

    private func readable() {
        guard !finished else { return }
        do throws(SocketError) {
            // One read: the scratch buffer holds the whole allowance.
            guard let count = try socket.receiveNow(into: loop.scratch.bytes) else { return }
            drained += count
            if count == 0 || drained >= Self.maxDrained { finish() }
        } catch {
            finish()
        }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        watch?.cancel()
        watch = nil
        if let ticket { DeadlineTimer.shared.cancel(ticket) }
        ticket = nil
        onFinish()
    }
}
