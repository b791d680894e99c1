import SkyNetRuntime

extension Socket {
    /// How TCP keepalive probes a silent peer: first probe after `idle`, then every
    /// `interval`, and the connection fails after `count` unanswered probes. A peer whose host
    /// died without a FIN is noticed within idle + interval × count (here 30 s + 3 × 5 s).
    package static let keepAlive = (idle: Int32(30), interval: Int32(5), count: Int32(3))

    /// Makes the socket's calls return at once instead of waiting (`EAGAIN`), or wait again.
    package func setNonBlocking(_ nonBlocking: Bool) {
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    /// Turns on TCP keepalive with short probes, so a half-open connection (the peer's host
    /// died, no FIN) fails the blocked `receive` instead of holding the descriptor forever.
    func enableKeepAlive() {
        setOption(SOL_SOCKET, SO_KEEPALIVE, 1)
        #if canImport(Glibc)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, Self.keepAlive.idle)
        #elseif canImport(Darwin)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPALIVE, Self.keepAlive.idle)
        #endif
        setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, Self.keepAlive.interval)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, Self.keepAlive.count)
    }

    /// Whether keepalive is on (for tests).
    var keepsAlive: Bool { option(SOL_SOCKET, SO_KEEPALIVE) != 0 }

    /// The seconds of silence before the first keepalive probe (for tests).
    var keepAliveIdleSeconds: Int32 {
        #if canImport(Glibc)
        option(Int32(IPPROTO_TCP), TCP_KEEPIDLE)
        #else
        option(Int32(IPPROTO_TCP), TCP_KEEPALIVE)
        #endif
    }

    /// Shrinks the kernel's buffers (tests use it to make a peer's buffer fill quickly).
    func setBufferSizes(send: Int32, receive: Int32) {
        setOption(SOL_SOCKET, SO_SNDBUF, send)
        setOption(SOL_SOCKET, SO_RCVBUF, receive)
    }

    private func option(_ level: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(descriptor, level, name, &value, &length)
        return value
    }
}
