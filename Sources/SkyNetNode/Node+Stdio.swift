import SkyNetRuntime
import SkyNetTransport

extension Node {
    /// A node that serves the one client at the other end of `connection` (not started yet):
    /// `skynet node --stdio`, whose connection is its own stdin and stdout under an SSH login.
    ///
    /// No listener exists and no token is asked for (`options.token` is ignored): the login
    /// that started the process is the authority, and its stdin is the only source of bytes.
    /// The client still owes its hello, and the sweeper still closes it after the idle bound
    /// (a coordinator pings an idle link well within it). When the connection ends, its scans
    /// are cancelled as on any connection; `connection.closed` tells the caller to `stop`.
    package static func serve(_ connection: Connection, options: Options, clock: any TimerClock = DeadlineTimer.shared,
                             log: @escaping @Sendable (String) -> Void = { _ in }) -> Node {
        Socket.ignoreBrokenPipes()
        var options = options
        options.token = nil
        let node = Node(options: options, listener: nil, clock: clock, log: log)
        node.serve(connection)
        node.startSweeper()
        if node.offersFiles { node.files.sweepLeftovers() }
        return node
    }
}
