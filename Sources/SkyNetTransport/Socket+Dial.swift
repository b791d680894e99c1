import SkyNetRuntime

extension Socket {
    /// Connects to `host:port`, each address the name has getting `timeout` (as `connect`
    /// gives it), without a thread that waits: a name is looked up on the resolver's pool (a
    /// numeric address needs no lookup), and each connect's end is waited for on one of the
    /// process's event loops. What a link dials with: ten thousand dials at once hold no
    /// thread each.
    package static func dial(host: String, port: Int, timeout: Duration) async throws(SocketError) -> Socket {
        let address = "\(host):\(port)"
        var lastError = SocketError("connect \(address)", reason: "no usable address")
        for candidate in try await lookUp(host: host, port: port) {
            let socket: Socket
            do { socket = try streamSocket(for: candidate, naming: address) } catch {
                lastError = error
                continue
            }
            do {
                try await socket.connect(to: candidate, until: .now + timeout, naming: address)
                socket.configureForLink()
                return socket
            } catch {
                lastError = error
                socket.close()
            }
        }
        throw lastError
    }

    /// Starts a non-blocking connect and awaits its end on an event loop, up to `deadline`.
    /// The socket blocks again once connected (a pipe-style flusher may wait on it).
    private func connect(to candidate: ResolvedAddress, until deadline: ContinuousClock.Instant,
                         naming address: String) async throws(SocketError) {
        if try startConnect(to: candidate, naming: address) {
            let failure = await connected(until: deadline)
            guard failure == 0 else { throw SocketError("connect \(address)", code: failure) }
        }
        setNonBlocking(false)
    }

    /// Waits on an event loop until the connect under way ends or `deadline` passes: 0 when
    /// connected, else the errno (ETIMEDOUT for the deadline, or one the loop could not watch).
    private func connected(until deadline: ContinuousClock.Instant) async -> Int32 {
        let loop: EventLoop
        do { loop = try EventLoop.shared.next() } catch { return error.code }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let wait = ConnectWait(continuation)
            loop.execute { [self] in
                do throws(EventLoopError) {
                    wait.watching(try loop.watch(descriptor, for: .writable) { [self] _ in wait.finish(pendingError) })
                } catch {
                    wait.finish(error.code)
                }
            }
            wait.timing(DeadlineTimer.shared.schedule(at: deadline) { loop.execute { wait.finish(ETIMEDOUT) } })
        }
    }
}

/// One connect's wait: whoever ends it first (the socket's watch or the deadline, both on the
/// loop's thread) takes the continuation, cancels the watch and the timer; the other finds
/// nothing to do.
private final class ConnectWait: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Int32, Never>?
        var watch: EventLoop.Watch?
        var timer: TimerTicket?
    }

    private let state: Locked<State>

    init(_ continuation: CheckedContinuation<Int32, Never>) {
        state = Locked(State(continuation: continuation))
    }

    /// The socket is watched (on the loop's thread); cancelled at once if the wait ended first.
    func watching(_ watch: EventLoop.Watch) {
        let ended = state.withLock { state in
            state.watch = watch
            return state.continuation == nil
        }
        if ended { watch.cancel() }
    }

    /// The deadline's timer; cancelled at once if the wait ended first.
    func timing(_ timer: TimerTicket) {
        let ended = state.withLock { state in
            state.timer = timer
            return state.continuation == nil
        }
        if ended { _ = DeadlineTimer.shared.cancel(timer) }
    }

    func finish(_ result: Int32) {
        let taken = state.withLock { state -> State? in
            guard state.continuation != nil else { return nil }
            defer { state = State() }
            return state
        }
        guard let taken, let continuation = taken.continuation else { return }
        taken.watch?.cancel()
        if let timer = taken.timer { _ = DeadlineTimer.shared.cancel(timer) }
        continuation.resume(returning: result)
    }
}
