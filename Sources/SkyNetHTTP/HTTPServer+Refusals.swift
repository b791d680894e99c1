import SkyNetRuntime
import SkyNetTransport

/// The connections a server refused with 503, until each is closed.
///
/// `refuse` runs on the accept thread: it sends the 503 without waiting (a fresh socket's
/// buffer takes a few hundred bytes at once), ends our side and hands the socket over. One
/// thread then watches every refused socket with `poll` and closes it once the client has
/// closed its side, after 64 KiB of what the client still sends, or at the deadline,
/// whichever comes first: closing while the request is still unread would reset the
/// connection and could lose the 503, and waiting for the client is bounded. At most
/// `capacity` wait at once; one more is closed at once (its 503 was sent). A flood of
/// connections therefore costs one thread and at most `capacity` descriptors.
final class RefusedConnections: Sendable {
    private struct Waiting {
        let socket: Socket
        let deadline: ContinuousClock.Instant
        var drained = 0
    }

    private struct State {
        /// Handed over by `refuse`, not yet taken by the thread.
        var incoming: [Waiting] = []
        /// Sockets handed over and not yet closed (incoming and watched).
        var open = 0
        var stopping = false
    }

    let capacity: Int
    let deadline: Duration
    private let state = Guarded(State())
    static let maxDrained = 64 * 1024

    init(capacity: Int, deadline: Duration) {
        self.capacity = capacity
        self.deadline = deadline
    }

    /// Sends `response` without waiting, ends our side and leaves the socket to the thread.
    /// Never blocks; the socket is ours from here on.
    func refuse(_ socket: Socket, with response: [UInt8]) {
        _ = try? socket.send(response, wait: false)
        socket.shutdown(reading: false, writing: true)
        // A read after `poll` said ready returns at once; this bounds a spurious wake-up.
        socket.setReceiveTimeout(.milliseconds(10))
        let taken = state.withLock { state -> Bool in
            guard !state.stopping, state.open < capacity else { return false }
            state.open += 1
            state.incoming.append(Waiting(socket: socket, deadline: .now + deadline))
            return true
        }
        if !taken { socket.close() }
    }

    /// Sockets handed over and not yet closed (for tests).
    var openCount: Int { state.withLock { $0.open } }

    /// Makes the thread close every socket and end.
    func stop() {
        state.withLock { $0.stopping = true }
    }

    /// The thread's loop: returns once stopped, with every socket closed.
    func run() {
        var watched: [Waiting] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            // Sleeps on the lock's condition while there is nothing to watch.
            let (new, stopping) = state.wait(while: { watched.isEmpty && $0.incoming.isEmpty && !$0.stopping }) { state, _ in
                defer { state.incoming = [] }
                return (state.incoming, state.stopping)
            }
            watched += new
            if stopping {
                for waiting in watched { waiting.socket.close() }
                let closed = watched.count
                state.withLock { $0.open -= closed }
                return
            }
            watched = closeFinished(watched, chunk)
        }
    }

    /// Waits (at most 100 ms, so new sockets and `stop()` are seen soon) for any socket to
    /// have something to read, then closes those done; returns the others.
    private func closeFinished(_ watched: [Waiting], _ chunk: UnsafeMutableRawBufferPointer) -> [Waiting] {
        var polled = watched.map { pollfd(fd: $0.socket.descriptor, events: Int16(POLLIN), revents: 0) }
        let nearest = watched.map(\.deadline).min() ?? .now
        let wait = max(.zero, min(.milliseconds(100), nearest - .now))
        let milliseconds = Int32(wait.components.attoseconds / 1_000_000_000_000_000 + wait.components.seconds * 1000)
        _ = poll(&polled, nfds_t(polled.count), milliseconds)  // EINTR: the next round looks again
        let now = ContinuousClock.now
        var kept: [Waiting] = []
        for (index, var waiting) in watched.enumerated() {
            var done = now >= waiting.deadline
            if !done, polled[index].revents != 0 {
                // Ready: a read returns at once (data, end of stream or the error).
                do throws(SocketError) {
                    let count = try waiting.socket.receive(into: chunk)
                    waiting.drained += count
                    done = count == 0 || waiting.drained >= Self.maxDrained
                } catch {
                    done = error.code != EAGAIN && error.code != EWOULDBLOCK && error.code != EINTR
                }
            }
            if done { waiting.socket.close() } else { kept.append(waiting) }
        }
        let closed = watched.count - kept.count
        if closed > 0 { state.withLock { $0.open -= closed } }
        return kept
    }
}

extension HTTPServer {
    /// Starts the thread that closes refused connections (see `RefusedConnections`).
    func startRefuser() {
        state.withLock { $0.liveThreads += 1 }
        startThread(named: "skynet-http-503") { [self] in
            refused.run()
            threadEnded()
        }
    }
}
