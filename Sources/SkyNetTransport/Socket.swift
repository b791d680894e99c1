import SkyNetRuntime

#if canImport(Glibc)
// Close-on-exec from birth: a child spawned by another thread between socket() and a later
// fcntl would otherwise inherit it (a job would hold the node's connections open).
let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
private let noSignal = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
let streamType = SOCK_STREAM
private let noSignal: Int32 = 0  // Darwin: SO_NOSIGPIPE is set per socket instead
#endif

// The C calls whose names the methods below reuse, reachable under other names.
private func system_bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    bind(fd, address, length)
}
private func system_listen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func system_accept(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?) -> Int32 {
    #if canImport(Glibc)
    // accept4 with SOCK_CLOEXEC: the accepted socket is close-on-exec from birth.
    if let accept4 = Accept4.call { return accept4(fd, address, length, Int32(SOCK_CLOEXEC.rawValue)) }
    #endif
    let accepted = accept(fd, address, length)
    if accepted >= 0 { _ = fcntl(accepted, F_SETFD, FD_CLOEXEC) }
    return accepted
}

#if canImport(Glibc)
/// glibc's `accept4`, which Swift's Glibc module hides (it needs _GNU_SOURCE), looked up once.
private enum Accept4 {
    typealias Function = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
    static let call: Function? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4").map { unsafeBitCast($0, to: Function.self) }
}
#endif
private func system_send(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int { send(fd, bytes, count, flags) }
private func system_shutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }
private func system_close(_ fd: Int32) -> Int32 { close(fd) }
func system_connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// A failed socket call, naming what was attempted: `bind 127.0.0.1:9001: Address already in use`.
package struct SocketError: Error, CustomStringConvertible, Sendable {
    package let operation: String
    package let reason: String
    /// The errno of the call, or 0 when the failure was not a syscall's (e.g. name lookup).
    package let code: Int32

    init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
        var reason = String(cString: strerror(code))
        if code == EMFILE || code == ENFILE { reason += DescriptorLimit.hint(for: code) }
        self.reason = reason
    }

    /// The process (EMFILE) or the system (ENFILE) ran out of descriptors.
    package var isOutOfDescriptors: Bool { code == EMFILE || code == ENFILE }

    init(_ operation: String, reason: String) {
        self.operation = operation
        self.code = 0
        self.reason = reason
    }

    package var description: String { "\(operation): \(reason)" }
}

/// A TCP socket. Each method wraps one system call and turns errno into a `SocketError`; as a
/// `ByteStream`, its calls block (but `send(_:wait:)` with `wait: false`).
package struct Socket: Sendable, Hashable {
    package let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Ignores SIGPIPE for the process: a write to a closed peer then fails with EPIPE
    /// instead of killing us (MSG_NOSIGNAL covers `send`, this covers everything else).
    package static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// A socket bound to `host:port` and listening; port 0 picks a free port.
    package static func listen(host: String, port: Int, backlog: Int32 = 512) throws(SocketError) -> Socket {
        let address = "\(host):\(port)"
        var lastError = SocketError("bind \(address)", reason: "no usable address")
        for candidate in try resolve(host: host, port: port, passive: true) {
            let fd = socket(candidate.family, streamType, 0)
            guard fd >= 0 else { lastError = SocketError("socket for \(address)"); continue }
            let socket = Socket(descriptor: fd)
            socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1)
            let bound = candidate.address.withUnsafeBytes {
                system_bind(fd, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), candidate.length)
            }
            guard bound == 0 else { lastError = SocketError("bind \(address)"); socket.close(); continue }
            guard system_listen(fd, backlog) == 0 else { lastError = SocketError("listen \(address)"); socket.close(); continue }
            return socket
        }
        throw lastError
    }

    /// Connects to `host:port`, giving up after `timeout`.
    package static func connect(host: String, port: Int, timeout: Duration) throws(SocketError) -> Socket {
        let address = "\(host):\(port)"
        var lastError = SocketError("connect \(address)", reason: "no usable address")
        for candidate in try resolve(host: host, port: port, passive: false) {
            let socket: Socket
            do { socket = try streamSocket(for: candidate, naming: address) } catch {
                lastError = error
                continue
            }
            do {
                try socket.connect(to: candidate, timeout: timeout, naming: address)
                socket.configureForLink()
                return socket
            } catch {
                lastError = error
                socket.close()
            }
        }
        throw lastError
    }

    /// A new TCP socket (close-on-exec) of `candidate`'s family, not connected yet.
    static func streamSocket(for candidate: ResolvedAddress, naming address: String) throws(SocketError) -> Socket {
        let fd = socket(candidate.family, streamType, 0)
        guard fd >= 0 else { throw SocketError("connect \(address)") }
        return Socket(descriptor: fd)
    }

    /// What every connected socket of a link has: no delay for small writes, keep-alive, and
    /// (Darwin) no SIGPIPE.
    func configureForLink() {
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        enableKeepAlive()
        #if canImport(Darwin)
        setOption(SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
    }

    /// Waits for a connection; the new socket has TCP_NODELAY set.
    package func accept() throws(SocketError) -> (socket: Socket, peer: String) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { system_accept(descriptor, $0, &length) }
        }
        guard fd >= 0 else { throw SocketError("accept") }
        let socket = Socket(descriptor: fd)
        socket.configureForLink()
        #if canImport(Darwin)
        socket.setNonBlocking(false)  // BSD's accept passes on a non-blocking listener's flag; Linux's does not
        #endif
        return (socket, Self.describe(&storage, length: length))
    }

    /// The `host:port` this socket is bound to (the real port after binding port 0).
    package func localAddress() throws(SocketError) -> (host: String, port: Int) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw SocketError("getsockname") }
        let text = Self.describe(&storage, length: length)
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
            throw SocketError("getsockname", reason: "unreadable address \(text)")
        }
        return (String(text[..<colon]), port)
    }

    /// Reads what has arrived, waiting for at least one byte; 0 means the peer closed.
    package func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw SocketError("recv")
        }
    }

    /// Reads what has arrived without waiting: nil when nothing has, 0 at the end.
    package func receiveNow(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int? {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw SocketError("recv")
        }
    }

    /// Sends what the kernel takes. With `wait: false` it never blocks and returns 0 when the
    /// send buffer is full; with `wait: true` it blocks until it can send something.
    package func send(_ bytes: UnsafeRawBufferPointer, wait: Bool) throws(SocketError) -> Int {
        let flags = noSignal | (wait ? 0 : Int32(MSG_DONTWAIT))
        while true {
            let count = system_send(descriptor, bytes.baseAddress, bytes.count, flags)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return 0 }
            throw SocketError("send")
        }
    }

    /// Makes a blocked `receive` or `accept` return: the way to stop a reader thread.
    package func shutdown(reading: Bool, writing: Bool) {
        let how: Int32 = reading && writing ? Int32(SHUT_RDWR) : reading ? Int32(SHUT_RD) : Int32(SHUT_WR)
        _ = system_shutdown(descriptor, how)
    }

    /// Bounds how long a blocking `receive` may wait.
    /// The bytes of the send queue the peer has not acknowledged (`SIOCOUTQ`): what a slow
    /// link still has to carry of what `send` took.
    package var unsentBytes: Int? {
        var count: Int32 = 0
        let siocoutq: UInt = 0x5411  // SIOCOUTQ (= TIOCOUTQ) on Linux
        return ioctl(descriptor, siocoutq, &count) == 0 ? Int(count) : nil
    }

    package func setReceiveTimeout(_ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Releases the descriptor. Call it exactly once, when no thread uses the socket any more.
    package func close() {
        _ = system_close(descriptor)
    }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    private func connect(to candidate: ResolvedAddress, timeout: Duration, naming address: String) throws(SocketError) {
        // Non-blocking connect, then poll: a dead host fails after `timeout`, not minutes.
        if try startConnect(to: candidate, naming: address) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            var ready: Int32
            repeat { ready = poll(&poller, 1, milliseconds) } while ready < 0 && errno == EINTR
            guard ready > 0 else { throw SocketError("connect \(address)", code: ready == 0 ? ETIMEDOUT : errno) }
            let failure = pendingError
            guard failure == 0 else { throw SocketError("connect \(address)", code: failure) }
        }
        setNonBlocking(false)
    }

    /// Makes the socket non-blocking and starts connecting it to `candidate`: true while the
    /// connect is under way (its end is waited for: `pendingError` then tells how it ended),
    /// false when it connected at once.
    func startConnect(to candidate: ResolvedAddress, naming address: String) throws(SocketError) -> Bool {
        setNonBlocking(true)
        let started = candidate.address.withUnsafeBytes {
            system_connect(descriptor, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), candidate.length)
        }
        guard started != 0 else { return false }
        guard errno == EINPROGRESS else { throw SocketError("connect \(address)") }
        return true
    }

    /// The error a connect under way ended with (SO_ERROR); 0 when it connected.
    var pendingError: Int32 {
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 else { return errno }
        return failure
    }
}

#if canImport(Glibc)
private let datagramType = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
#elseif canImport(Darwin)
private let datagramType = SOCK_DGRAM
#endif

// Unix datagram sockets: systemd's notify channel (`ServiceNotifier`) and, in tests, its
// receiving end.
extension Socket {
    /// An unbound `AF_UNIX` datagram socket, close-on-exec from birth.
    package static func unixDatagram() throws(SocketError) -> Socket {
        let fd = socket(AF_UNIX, datagramType, 0)
        guard fd >= 0 else { throw SocketError("socket AF_UNIX") }
        #if canImport(Darwin)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        Socket(descriptor: fd).setOption(SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
        return Socket(descriptor: fd)
    }

    /// Sends `bytes` as one datagram to `address`, never waiting: a receiver whose queue is
    /// full fails the send (EAGAIN) rather than holding up the caller, who may be on the pool.
    package func send(datagram bytes: [UInt8], to address: UnixSocketAddress) throws(SocketError) {
        let flags = noSignal | Int32(MSG_DONTWAIT)
        while true {
            let sent = address.withSockaddr { pointer, length in
                bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, flags, pointer, length) }
            }
            if sent >= 0 { return }
            if errno == EINTR { continue }
            throw SocketError("send to \(address)")
        }
    }

    /// Binds this (unix) socket to `address`: the receiving end of a datagram channel.
    package func bind(to address: UnixSocketAddress) throws(SocketError) {
        let bound = address.withSockaddr { system_bind(descriptor, $0, $1) }
        guard bound == 0 else { throw SocketError("bind \(address)") }
    }
}
