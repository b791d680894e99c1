import SkyNetRuntime

/// A listening socket whose accept loop runs on a thread of its own.
package final class Listener: Sendable {
    package let socket: Socket
    /// The bound address; `port` is the real one when 0 was asked for.
    package let host: String
    package let port: Int
    /// `stopping`: stop() was called; `closed`: the accept thread closed the socket. Both
    /// change under the lock, so shutdown never reaches a closed (maybe reused) descriptor.
    private let state = Locked((stopping: false, closed: false))
    /// Fulfilled when the accept loop has ended and the socket is closed.
    package let stopped = AsyncSignal<Void>()

    /// Binds and listens on `host:port` (port 0: any free port). Name lookup may block, so it
    /// runs on a thread of its own.
    package static func bind(host: String, port: Int) async throws -> Listener {
        try await onOwnThread(named: "skynet-bind") {
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

    /// Starts accepting; `onAccept` runs on the accept thread for each new connection and must
    /// not block. A peer that gave up before it was taken is skipped; any other accept failure
    /// (out of descriptors, out of memory) is waited out 100 ms at a time, never spun on;
    /// `onFailure` hears the first failure of each burst (a burst ends with the next accepted
    /// connection), never one per attempt. Only `stop()` ends the loop.
    package func start(onAccept: @escaping @Sendable (Socket, String) -> Void,
                      onFailure: @escaping @Sendable (SocketError) -> Void = { _ in }) {
        startThread(named: "skynet-accept") { [self] in
            var failing = false
            while !state.withLock({ $0.stopping }) {
                do throws(SocketError) {
                    let (client, peer) = try socket.accept()
                    failing = false
                    onAccept(client, peer)
                } catch {
                    if state.withLock({ $0.stopping }) { break }
                    // A peer that gave up before we took it, or a signal: take the next one.
                    if error.code == ECONNABORTED || error.code == EINTR { continue }
                    if !failing { onFailure(error) }
                    failing = true
                    // Out of descriptors or memory (or anything else): give connections a
                    // moment to close rather than spin on a failure that has not cleared
                    // (a stop ends the pause).
                    state.wait(while: { !$0.stopping }, deadline: .now + .milliseconds(100)) { _, _ in }
                }
            }
            state.withLock { $0.closed = true }
            socket.close()
            stopped.fulfil(())
        }
    }

    /// Stops accepting: wakes the accept thread, which closes the socket.
    package func stop() {
        state.withLock { state in
            guard !state.stopping else { return }
            state.stopping = true
            if !state.closed { socket.shutdown() }
        }
    }
}
