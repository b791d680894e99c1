import SkyNetRuntime

extension HTTPServer {
    /// Starts the one timer thread: it cuts plain responses stuck past their deadline (a
    /// client that never reads) and sends `: keepalive` to every stream on time.
    func startTicker() {
        state.withLock { $0.liveThreads += 1 }
        startThread(named: "skynet-http-ticker") { [self] in
            while tick() {}
            threadEnded()
        }
    }

    /// Waits until something is due (at most a second, so a new deadline is never missed by
    /// more) and does it; false once the server stops.
    private func tick() -> Bool {
        let interval = configuration.keepaliveInterval
        let wake = min(state.withLock { $0.lastKeepalive } + interval, .now + .seconds(1))
        return state.wait(while: { !$0.stopping && ContinuousClock.now < wake }, deadline: wake) { state, _ in
            guard !state.stopping else { return false }
            let now = ContinuousClock.now
            let keepalive = now >= state.lastKeepalive + interval
            if keepalive { state.lastKeepalive = now }
            for client in state.clients.values {
                switch client.stage {
                case .writing(let deadline) where now >= deadline:
                    // Under the lock, while the entry exists: the descriptor is still ours.
                    client.socket.shutdown()
                case .streaming(let stream) where keepalive:
                    stream.enqueue(EventFrame.keepalive, snapshot: state.snapshot)
                default:
                    break
                }
            }
            return true
        }
    }
}

extension HTTPServer {
    /// Waits (on a thread of its own) until at most `count` connections are open, up to
    /// `timeout`; whether it got there. For tests: they await the state, never sleep.
    func waitUntilClients(atMost count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        return (try? await onOwnThread(named: "skynet-http-wait") { [state] in
            state.wait(while: { $0.clients.count > count }, deadline: deadline) { _, timedOut in !timedOut }
        }) ?? false
    }
}
