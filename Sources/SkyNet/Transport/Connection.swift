import Dispatch
import Foundation

/// A TCP connection that carries lines of bytes.
///
/// A reader thread of its own does the blocking reads and hands each complete line to a
/// handler. Writes never block the caller: what the kernel does not take at once is queued,
/// up to a bound, and sent by a short-lived flusher thread; a peer that stops reading fails
/// the connection. `close()` wakes the reader with shutdown(); the reader thread closes the
/// descriptor, after the flusher is gone, in one place.
public final class Connection: Sendable {
    public struct Limits: Sendable {
        /// The longest line accepted, newline excluded (PROTOCOL.md: 1 MiB).
        public var maxLineBytes = 1 << 20
        /// The most bytes queued for a peer that does not read.
        public var maxQueuedBytes = 8 << 20
        public init() {}
    }

    /// What the reader thread hands to the handler.
    public enum Event: Sendable {
        case line(Data)
        /// A line grew past `maxLineBytes`: the handler may send a last reply; reading stops.
        case lineTooLong
    }

    /// Why a connection ended.
    public enum CloseReason: Sendable, CustomStringConvertible {
        case peerClosed, closedLocally, lineTooLong, writeBacklog
        case failed(SocketError)

        public var description: String {
            switch self {
            case .peerClosed: "closed by peer"
            case .closedLocally: "closed"
            case .lineTooLong: "line too long"
            case .writeBacklog: "peer does not read its replies"
            case .failed(let error): error.description
            }
        }
    }

    /// Sending on a connection that has ended.
    public struct Closed: Error, CustomStringConvertible {
        public var description: String { "connection closed" }
    }

    private struct State {
        var outbox: [UInt8] = []
        var flushing = false
        var closing: CloseReason?
        /// Set by the reader thread when it is done; the descriptor is then (about to be) closed.
        var finished = false
        var started = false
    }

    public let socket: Socket
    /// The peer's `host:port`, for logs.
    public let peer: String
    private let limits: Limits
    private let state = Locked(State())
    private let flusherExited = DispatchSemaphore(value: 0)
    /// Fulfilled once the connection has ended and its descriptor is closed.
    public let closed = AsyncSignal<CloseReason>()

    public init(socket: Socket, peer: String, limits: Limits = Limits()) {
        self.socket = socket
        self.peer = peer
        self.limits = limits
    }

    /// Starts the reader thread. `onEvent` and then `onClose` run on it, one call at a time;
    /// they must not block for long. Call once.
    public func start(onEvent: @escaping @Sendable (Event) -> Void, onClose: @escaping @Sendable (CloseReason) -> Void = { _ in }) {
        let closedBeforeStart = state.withLock { state -> CloseReason? in
            state.started = true
            return state.finished ? state.closing : nil
        }
        if let closedBeforeStart {
            // Closed before it started: the descriptor is already gone, nothing to read.
            onClose(closedBeforeStart)
            return
        }
        startThread(named: "skynet-reader") { [self] in
            var reason = readLines(onEvent)
            if case .lineTooLong = reason { drainAfterRefusal() }
            if let local = state.withLock({ $0.closing }), case .peerClosed = reason { reason = local }
            if let local = state.withLock({ $0.closing }), case .failed = reason { reason = local }
            finish()
            onClose(reason)
            closed.fulfil(reason)
        }
    }

    /// Sends bytes (whole lines, newline included) without blocking. Throws `Closed` when the
    /// connection has ended; fails the connection when the peer lets too much queue up.
    public func send(_ bytes: [UInt8]) throws(Closed) {
        let outcome: Result<Bool, Closed> = state.withLock { state in
            guard state.closing == nil, !state.finished else { return .failure(Closed()) }
            if state.outbox.isEmpty, !state.flushing {
                let sent: Int
                do throws(SocketError) {
                    sent = try socket.send(bytes, wait: false)
                } catch {
                    closeLocked(&state, reason: .failed(error))
                    return .failure(Closed())
                }
                if sent == bytes.count { return .success(false) }
                state.outbox.append(contentsOf: bytes[sent...])
                state.flushing = true
                return .success(true)
            }
            guard state.outbox.count + bytes.count <= limits.maxQueuedBytes else {
                closeLocked(&state, reason: .writeBacklog)
                return .failure(Closed())
            }
            state.outbox.append(contentsOf: bytes)
            return .success(false)
        }
        if try outcome.get() {
            startThread(named: "skynet-flusher") { [self] in flush() }
        }
    }

    /// Ends the connection: the reader wakes, and the descriptor is closed once it is done.
    public func close() {
        state.withLock { closeLocked(&$0, reason: .closedLocally) }
    }

    private func closeLocked(_ state: inout State, reason: CloseReason) {
        guard state.closing == nil else { return }
        state.closing = reason
        if state.started, !state.finished {
            socket.shutdown()
        } else if !state.started {
            // Never started: no reader will close the descriptor, so do it here.
            state.finished = true
            socket.close()
            closed.fulfil(reason)
        }
    }

    private func readLines(_ onEvent: (Event) -> Void) -> CloseReason {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        var partial = Data()
        while true {
            let count: Int
            do { count = try socket.receive(into: chunk) } catch { return .failed(error) }
            if count == 0 { return .peerClosed }
            guard let base = chunk.baseAddress else { return .peerClosed }
            var start = 0
            while start < count, let found = memchr(base + start, 10, count - start) {
                let end = base.distance(to: found)
                guard partial.count + end - start <= limits.maxLineBytes else {
                    onEvent(.lineTooLong)
                    return .lineTooLong
                }
                if partial.isEmpty {
                    onEvent(.line(Data(bytes: base + start, count: end - start)))
                } else {
                    partial.append(Data(bytes: base + start, count: end - start))
                    onEvent(.line(partial))
                    partial = Data()
                }
                start = end + 1
            }
            partial.append(Data(bytes: base + start, count: count - start))
            if partial.count > limits.maxLineBytes {
                onEvent(.lineTooLong)
                return .lineTooLong
            }
        }
    }

    /// After refusing an over-long line: stop sending, and read (and drop) what the peer is
    /// still sending for a moment, so that closing does not reset the connection before the
    /// peer has read our reply. Bounded: 16 MiB and one second in all.
    private func drainAfterRefusal() {
        socket.shutdown(reading: false, writing: true)
        let deadline = ContinuousClock.now + .seconds(1)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        var drained = 0
        while drained < 16 << 20 {
            let left = deadline - ContinuousClock.now
            guard left > .milliseconds(1) else { return }
            socket.setReceiveTimeout(left)
            guard let count = try? socket.receive(into: chunk), count > 0 else { return }
            drained += count
        }
    }

    /// The reader is done: wait for a running flusher, then close the descriptor.
    private func finish() {
        let mustWait = state.withLock { state -> Bool in
            state.finished = true
            if state.closing == nil { state.closing = .peerClosed }
            return state.flushing
        }
        if mustWait {
            socket.shutdown()
            flusherExited.wait()
        }
        socket.close()
    }

    /// Sends the queued bytes, blocking its own thread, until the queue is empty or the
    /// connection ends.
    private func flush() {
        while true {
            let pending: [UInt8]? = state.withLock { state in
                guard state.closing == nil, !state.outbox.isEmpty else { return nil }
                return Array(state.outbox.prefix(256 * 1024))
            }
            guard let pending else { break }
            do {
                let sent = try socket.send(pending, wait: true)
                state.withLock { $0.outbox.removeFirst(sent) }
            } catch {
                state.withLock { closeLocked(&$0, reason: .failed(error)) }
                break
            }
        }
        let readerWaits = state.withLock { state -> Bool in
            state.flushing = false
            state.outbox = []
            return state.finished
        }
        if readerWaits { flusherExited.signal() }
    }
}
