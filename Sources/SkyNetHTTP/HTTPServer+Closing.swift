import SkyNetRuntime
import SkyNetTransport

/// The connections whose response is out (an answer, or a 503 for one over a cap), until each
/// is closed. They are no longer the server's clients: their slots are free for the next.
///
/// Each is drained on an event loop (`SocketDrain`): closed once the client has closed its
/// side, after 64 KiB of what it still sends, or at the deadline. At most `capacity` drain at
/// once; one more is closed at once (its response was sent; only a client that sent more than
/// it read may then see a reset). So a flood of connections costs no thread and at most
/// `capacity` descriptors here.
final class ClosingConnections: Sendable {
    private struct State {
        var draining: [Int: SocketDrain] = [:]
        var nextID = 0
        var stopping = false
    }

    let capacity: Int
    let deadline: Duration
    private let state = Guarded(State())
    /// Fulfilled once stopped with every socket closed.
    let closed = AsyncSignal<Void>()

    init(capacity: Int, deadline: Duration) {
        self.capacity = capacity
        self.deadline = deadline
    }

    /// Sends `response` without waiting (a fresh socket's buffer takes a few hundred bytes at
    /// once) and closes the socket gracefully. Never blocks; the socket is ours from here on.
    func refuse(_ socket: Socket, with response: [UInt8]) {
        _ = try? socket.send(response, wait: false)
        close(socket, on: try? EventLoop.shared.next())
    }

    /// Drains the socket, whose response has left, on `loop` and closes it (at once when over
    /// the capacity, stopping, or without a loop). Never blocks; the socket is ours from here on.
    func close(_ socket: Socket, on loop: EventLoop?) {
        guard let loop else { return socket.close() }
        let drain = state.withLock { state -> SocketDrain? in
            guard !state.stopping, state.draining.count < capacity else { return nil }
            let id = state.nextID
            state.nextID += 1
            let drain = SocketDrain(socket: socket, loop: loop) { [self] in drained(id, socket) }
            state.draining[id] = drain
            return drain
        }
        guard let drain else { return socket.close() }
        drain.start(deadline: deadline)
    }

    private func drained(_ id: Int, _ socket: Socket) {
        socket.close()
        let last = state.withLock { state -> Bool in
            state.draining[id] = nil
            return state.stopping && state.draining.isEmpty
        }
        if last { closed.fulfil(()) }
    }

    /// Sockets handed over and not yet closed (for tests).
    var openCount: Int { state.withLock { $0.draining.count } }

    /// Closes every socket now; `closed` is fulfilled once they are.
    func stop() {
        let drains = state.withLock { state -> [SocketDrain] in
            state.stopping = true
            return Array(state.draining.values)
        }
        if drains.isEmpty { closed.fulfil(()) }
        for drain in drains { drain.cut() }
    }
}
