import SkyNetRuntime

/// systemd's notify channel (sd_notify's datagram protocol, written here without libsystemd):
/// one datagram of `NAME=value` lines, such as `READY=1\nSTATUS=accepting`, sent to the
/// `AF_UNIX` socket that `NOTIFY_SOCKET` names.
///
/// A service manager that watches us sets `WATCHDOG_USEC`: a `WATCHDOG=1` is then due at
/// least that often, and we send one every half of it, but not more often than every 10 ms
/// (`watchdogInterval`). `WATCHDOG_PID`, when set, names the process it is meant for: another
/// process (a parent that exec'd us without clearing it) gets no watchdog.
///
/// Sends never wait (a full receiver fails them), so any thread may notify, the pool's
/// included. The first failure is logged, later ones are not (a lost manager would otherwise
/// fill the log every watchdog tick).
package final class ServiceNotifier: Sendable {
    /// Where the datagrams go.
    package let address: UnixSocketAddress
    /// How often `WATCHDOG=1` is due: half of `WATCHDOG_USEC`, at least 10 ms; nil for no watchdog.
    package let watchdogInterval: Duration?
    private let socket: Socket
    private let log: @Sendable (String) -> Void
    /// Whether a failed send has been logged already.
    private let failureLogged = Locked(false)

    /// The notifier `env` asks for: nil when `NOTIFY_SOCKET` is unset or empty, or when it
    /// (or the socket) is unusable, which `log` is told once.
    package static func fromEnvironment(_ env: [String: String], log: @escaping @Sendable (String) -> Void = { _ in }) -> ServiceNotifier? {
        guard let text = env["NOTIFY_SOCKET"], !text.isEmpty else { return nil }
        let address: UnixSocketAddress, socket: Socket
        do throws(SocketError) {
            address = try UnixSocketAddress(text)
            socket = try Socket.unixDatagram()
        } catch {
            log("Not notifying the service manager: NOTIFY_SOCKET: \(error)")
            return nil
        }
        let watchdog = watchdogInterval(env, pid: getpid(), log: log)
        return ServiceNotifier(address: address, socket: socket, watchdogInterval: watchdog, log: log)
    }

    /// The longest `WATCHDOG_USEC` taken as it is: a day.
    static let longestWatchdog: UInt64 = 86_400_000_000

    /// The shortest interval between two `WATCHDOG=1`: what half of a `WATCHDOG_USEC` under
    /// 20 ms becomes.
    ///
    /// A floor rather than a refusal: a node that sent no watchdog at all would be killed by
    /// systemd after the first period, whatever it asked for, while a ping every 10 ms meets
    /// any period of 20 ms or more (and one a little shorter). A period shorter still (`1`, a
    /// unit forgotten) no process can meet: systemd then says so in its log, and ours says why.
    /// Without the floor, 1 µs would make the tick a loop with no wait (half of 1 is 0).
    static let shortestWatchdogInterval: Duration = .milliseconds(10)

    /// Half of `WATCHDOG_USEC` (at least `shortestWatchdogInterval`), when it is a positive
    /// number of microseconds meant for `pid`.
    static func watchdogInterval(_ env: [String: String], pid: pid_t, log: @Sendable (String) -> Void) -> Duration? {
        guard let text = env["WATCHDOG_USEC"], !text.isEmpty else { return nil }
        if let owner = env["WATCHDOG_PID"], !owner.isEmpty, owner != String(pid) {
            // Another process's (a parent that exec'd us without clearing it): not ours, quietly.
            if let other = pid_t(owner), other > 0 { return nil }
            log("No watchdog: WATCHDOG_PID is not a process ID: \(owner.escapingControlCharacters)")
            return nil
        }
        guard let microseconds = UInt64(text), microseconds > 0 else {
            log("No watchdog: WATCHDOG_USEC is not a positive number of microseconds: \(text.escapingControlCharacters)")
            return nil
        }
        // UInt64.max is systemd's "infinity"; past a day, a ping every half day is as good
        // (early is never wrong) and keeps the clock's arithmetic small.
        guard microseconds != UInt64.max else { return nil }
        let half = Duration.microseconds(min(microseconds, Self.longestWatchdog) / 2)
        guard half >= Self.shortestWatchdogInterval else {
            log("WATCHDOG_USEC=\(microseconds) is under 20 ms: WATCHDOG=1 is sent every 10 ms, not more often")
            return Self.shortestWatchdogInterval
        }
        return half
    }

    private init(address: UnixSocketAddress, socket: Socket, watchdogInterval: Duration?, log: @escaping @Sendable (String) -> Void) {
        self.address = address
        self.socket = socket
        self.watchdogInterval = watchdogInterval
        self.log = log
    }

    /// Sends `lines` as one datagram; false if it could not be sent (logged the first time).
    @discardableResult
    package func notify(_ lines: [String]) -> Bool {
        // A state is one line: a newline in a value (a STATUS text) would start another.
        let text = lines.map { $0.replacingNewlines }.joined(separator: "\n")
        do throws(SocketError) {
            try socket.send(datagram: Array(text.utf8), to: address)
            return true
        } catch {
            let first = failureLogged.withLock { logged in
                defer { logged = true }
                return !logged
            }
            if first { log("Cannot notify the service manager (further failures are not logged): \(error)") }
            return false
        }
    }

    deinit {
        socket.close()
    }
}

private extension String {
    /// This text with each CR or LF made a space.
    var replacingNewlines: String {
        String(decoding: utf8.map { $0 == 10 || $0 == 13 ? 32 : $0 }, as: UTF8.self)
    }
}
