import SkyNetRuntime

/// A listening socket whose connections are taken on one of the process's event loops.
package final class Listener: Sendable {
    package let socket: Socket
    /// The bound address; `port` is the real one when 0 was asked for.
    package let host: String
    package let port: Int
    /// `stopping`: stop() was called (or start failed); `watch`: the loop's, once started. The
    /// socket is closed by whoever sets `stopping`, or, once watched, by the loop. `failing`:
    /// the last accept failed (the next failure of the burst is not told).
    private let state = Locked<(stopping: Bool, watch: EventLoop.Watch?, failing: Bool)>((false, nil, false))
    /// Fulfilled when accepting has ended and the socket is closed.
    package let stopped = AsyncSignal<Void>()

    /// Binds and listens on `host:port` (port 0: any free port). Name lookup may block, so it
    /// runs on the blocking pool.
    package static func bind(host: String, port: Int) async throws -> Listener {
        try await onBlockingPool {
            let socket = try Socket.listen(host: host, port: port)
            do {
                let address = try socket.localAddress()
                return Listener(socket: socket, host: address.host, port: address.port)
            } catch {
                socket.close()
                throw error
            }
        }
    }

    private init(socket: Socket, host: String, port: Int) {
        self.socket = socket
        self.host = host
        self.port = port
    }

    /// Starts accepting on one of the process's event loops; `onAccept` runs on the loop's
    /// thread for each new connection and must not block. A peer that gave up before it was
    /// taken is skipped; any other accept failure (out of descriptors, out of memory) is waited
    /// out 100 ms at a time, never spun on; `onFailure` hears the first failure of each burst
    /// (a burst ends with the next accepted connection), never one per attempt. Only `stop()`
    /// ends accepting. Throws, with the socket closed, when the loop cannot watch it.
    package func start(onAccept: @escaping @Sendable (Socket, String) -> Void,
                      onFailure: @escaping @Sendable (SocketError) -> Void = { _ in }) throws(EventLoopError) {
        // Under the lock `stop` takes: a stop before this finds no watch and closes the socket
        // itself; one after it finds the watch and ends it on the loop.
        let failure = state.withLock { state -> EventLoopError? in
            guard !state.stopping else { return nil }
            do throws(EventLoopError) {
                let loop = try EventLoop.shared.next()
                socket.setNonBlocking(true)  // an accept that finds nobody returns at once (the accepted socket blocks)
                state.watch = try loop.watch(socket.descriptor, for: .readable) { [self] _ in
                    acceptWaiting(onAccept: onAccept, onFailure: onFailure)
                }
                return nil
            } catch {
                state.stopping = true
                socket.close()
                return error
            }
        }
        if let failure {
            stopped.fulfil(())
            throw failure
        }
    }

    /// Takes the connections waiting (at most 64 at a time, so one listener cannot hold its
    /// loop); on a failure other than a peer that gave up, tells it (the first of a burst) and
    /// stops watching for 100 ms.
    private func acceptWaiting(onAccept: (Socket, String) -> Void, onFailure: (SocketError) -> Void) {
        for _ in 0..<64 {
            do throws(SocketError) {
                let (client, peer) = try socket.accept()
                state.withLock { $0.failing = false }
                onAccept(client, peer)
            } catch {
                if error.code == EAGAIN || error.code == EWOULDBLOCK { return }
                // A peer that gave up before we took it, or a signal: take the next one.
                if error.code == ECONNABORTED || error.code == EINTR { continue }
                let first = state.withLock { state in
                    defer { state.failing = true }
                    return !state.failing
                }
                if first { onFailure(error) }
                pause()
                return
            }
        }
    }

    /// Out of descriptors or memory (or anything else): give connections a moment to close
    /// rather than spin on a failure that has not cleared.
    private func pause() {
        guard let watch = state.withLock({ $0.stopping ? nil : $0.watch }) else { return }
        watch.change(to: [])
        DeadlineTimer.shared.schedule(after: .milliseconds(100)) { [self] in
            watch.loop.execute { [self] in
                if let watch = state.withLock({ $0.stopping ? nil : $0.watch }) { watch.change(to: .readable) }
            }
        }
    }

    /// Stops accepting: the loop stops watching the socket and closes it.
    package func stop() {
        let watch = state.withLock { state -> EventLoop.Watch?? in
            guard !state.stopping else { return .none }
            state.stopping = true
            if state.watch == nil { socket.close() }  // never started: nobody else closes it
            return .some(state.watch)
        }
        guard case .some(let watch) = watch else { return }
        guard let watch else { return stopped.fulfil(()) }
        // On the loop's thread: once the watch is cancelled there, no handler is running.
        watch.loop.execute { [self] in
            watch.cancel()
            socket.close()
            stopped.fulfil(())
        }
    }
}
