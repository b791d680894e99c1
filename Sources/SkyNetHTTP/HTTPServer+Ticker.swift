import SkyNetRuntime

extension HTTPServer {
    /// Schedules the next tick on the real clock, when something is due (at most a second away,
    /// so a new deadline is never missed by more): each cuts plain responses stuck past their
    /// deadline (a client that never reads) and sends `: keepalive` to every stream on time.
    func scheduleTick() {
        let wake = min(state.withLock { $0.lastKeepalive } + configuration.keepaliveInterval, .now + .seconds(1))
        DeadlineTimer.shared.schedule(at: wake) { [weak self] in
            if self?.tick() == true { self?.scheduleTick() }
        }
    }

    /// Does what is due, on the timer thread (short, never blocking); false once the server stops.
    private func tick() -> Bool {
        let interval = configuration.keepaliveInterval
        return state.withLock { state in
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

    /// Waits (on a thread of its own) until at most `count` connections are open, up to
    /// `timeout`; whether it got there. For tests: they await the state, never sleep.
    func waitUntilClients(atMost count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        return (try? await onOwnThread(named: "skynet-http-wait") { [state] in
            state.wait(while: { $0.clients.count > count }, deadline: deadline) { _, timedOut in !timedOut }
        }) ?? false
    }
}
