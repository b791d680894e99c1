import SkyNetLink
import SkyNetRuntime
import SkyNetTransport
import SkyNetWire

/// One `ssh` child and the `Connection` over its stdin and stdout: the channel to the
/// `skynet node --stdio` it runs on a host. ssh's stderr (its own messages and the node's log)
/// is read on one of the process's event loops (`SSHChannel+Stderr`).
///
/// Every path reaps ssh: when the connection ends (closed here, or ssh's stdout ended), the
/// channel closes its end of the pipes (ssh then sends EOF and the node exits), waits a moment
/// for ssh to exit, and stops it otherwise.
package final class SSHChannel: Sendable {
    package let connection: Connection
    let child: ChildProcess
    /// The login (`alice@gpu1:2222`) and the node's name, for messages.
    let login: SSHLogin
    let name: String
    let checkHint: String
    /// The last lines of ssh's stderr, and whether it has ended (`SSHChannel+Stderr`).
    let stderr: StderrTail
    /// Where the host's stderr lines go once the node welcomed us.
    let hostLog: @Sendable (String) -> Void
    private let closing = Locked<Task<Void, Never>?>(nil)

    /// The environment ssh gets: ours without any `SKYNET_TOKEN*` (ssh could pass it on with
    /// `SendEnv`, and the host must never get the coordinator's secret).
    static func environment(from environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        environment.filter { !$0.key.hasPrefix("SKYNET_TOKEN") }
    }

    /// Starts `command` to `login` running `remote`; `hostLog` gets stderr's lines, prefixed
    /// `[name] ` and rate-limited.
    package static func open(name: String, login: SSHLogin, command: SSHCommand, remote: String, timeout: Duration,
                            hostLog: @escaping @Sendable (String) -> Void) async throws -> SSHChannel {
        let arguments = command.arguments(to: login, remote: remote, connectTimeout: timeout)
        let (child, reading, writing, errors) = try await onBlockingPool {
            let toChild = try ChildProcess.makePipe()
            let fromChild: (read: Int32, write: Int32)
            do { fromChild = try ChildProcess.makePipe() } catch {
                closeFile(toChild.read)
                closeFile(toChild.write)
                throw error
            }
            var options = ChildProcess.Options(arguments: Array(arguments.dropFirst()), environment: environment())
            options.stdin = .descriptor(toChild.read)
            options.stdout = .descriptor(fromChild.write)
            options.stderr = .pipe
            options.searchPath = true
            // A Ctrl-C at the terminal reaches us, not ssh: the orderly stop still cancels the
            // host's tasks before the channel closes.
            options.ownProcessGroup = true
            defer {
                closeFile(toChild.read)
                closeFile(fromChild.write)
            }
            do {
                let child = try ChildProcess.spawn(arguments[0], options)
                return (child, fromChild.read, toChild.write, child.takeOutputPipe(2))
            } catch {
                closeFile(toChild.write)
                closeFile(fromChild.read)
                throw error
            }
        }
        let stream: DescriptorPair
        do {
            stream = try DescriptorPair(reading: reading, writing: writing)
        } catch {
            closeFile(reading)
            closeFile(writing)
            if let errors { closeFile(errors) }
            await child.stop(grace: .zero)
            throw error
        }
        let channel = SSHChannel(connection: Connection(stream: stream, peer: "ssh \(login)"), child: child,
                                 login: login, name: name, checkHint: command.checkHint(for: login), hostLog: hostLog)
        channel.readStderr(errors)
        // ssh's stdout ended: ssh is on its way out, with the status that says why.
        channel.connection.closed.whenFulfilled { reason in
            if case .peerClosed = reason { channel.startClosing(stopAtOnce: false) } else { channel.startClosing() }
        }
        return channel
    }

    private init(connection: Connection, child: ChildProcess, login: SSHLogin, name: String, checkHint: String,
                 hostLog: @escaping @Sendable (String) -> Void) {
        self.hostLog = hostLog
        self.connection = connection
        self.child = child
        self.login = login
        self.name = name
        self.checkHint = checkHint
        self.stderr = StderrTail()
    }

    /// What to do about a first line over the limit: only the node may write to stdout.
    static let overLongFix = "only protocol lines may come on its stdout: check the skynet on that host (skynet --version there) and that the login's start-up files print nothing"

    /// Closes the channel and reaps ssh: EOF first (the node exits, ssh follows within 2 s),
    /// then SIGTERM, and SIGKILL after 0.5 s.
    package func close() async {
        connection.close()
        await startClosing().value
    }

    /// Reaps ssh once: after the end of its input it has 2 s to leave, and its stderr 1 s more
    /// to end. `stopAtOnce` (by default when we close before the node's welcome): ssh may still
    /// be logging in, and would not see the end of its input, so it is stopped without waiting.
    @discardableResult
    private func startClosing(stopAtOnce: Bool? = nil) -> Task<Void, Never> {
        closing.withLock { closing in
            if let closing { return closing }
            let child = self.child
            let wait = Self.closingWait(stopAtOnce: stopAtOnce, welcomed: stderr.isForwarding)
            let ended = stderr.ended
            let task = Task {
                if (try? await withTimeout(wait) { await child.exit.value }) == nil {
                    await child.stop(grace: .milliseconds(500))
                }
                // The host's last lines, and the count of those dropped, are said before the
                // channel is closed: a scan's summary must not overtake them.
                _ = try? await withTimeout(.seconds(1)) { await ended.value }
            }
            closing = task
            return task
        }
    }

    /// How long ssh may take to leave on its own once its input ended.
    static func closingWait(stopAtOnce: Bool?, welcomed: Bool) -> Duration {
        stopAtOnce ?? !welcomed ? .zero : .seconds(2)
    }

    /// Why the session failed, as ssh says it: waits (≤ 1 s) for ssh's exit and the end of its
    /// stderr, then classifies. ssh still running (a node that ended the session otherwise) is
    /// closed first. `error`: what the link saw (a timeout, a close). When the link gave up on
    /// the node (no welcome in time, a first line over the limit), it closed the channel, which
    /// stops ssh: ssh's exit (255 on SIGTERM) is then ours, and what the node did is said instead.
    package func failure(after error: any Error, answerBound: Duration) async -> any Error {
        if let garbage = error as? NotTheProtocol {
            await close()
            let text = garbage.firstLine.trimming(\.isWhitespace)
            return SSHFailure(kind: .login, reason: "the login printed \"\(text)\" on stdout before skynet started",
                              fix: "make the shell's start-up files (~/.bashrc, ~/.profile, …) print nothing when not interactive; check the login with: \(checkHint)")
        }
        if let overLong = error as? HandshakeLineTooLong {
            await close()
            return SSHFailure(kind: .login, reason: "the first line from skynet node was over \(overLong.maxBytes) bytes", fix: Self.overLongFix)
        }
        if error is TimeoutError {
            await close()
            return SSHFailure(kind: .noAnswer, reason: "no answer from skynet node within \(Int(answerBound.seconds.rounded(.up))) s", fix: "")
        }
        // The node's own answer (a refused hello) says more than how ssh ended after it.
        if error is CancellationError || error is WireError || error is PeerUnauthenticated {
            await close()
            return error
        }
        let exit = child.exit, ended = stderr.ended
        let exited = try? await withTimeout(.seconds(1)) { await exit.value }
        guard let exited else {
            await close()
            return error
        }
        _ = try? await withTimeout(.seconds(1)) { await ended.value }
        return SSHFailure.classify(exit: exited, lastLine: stderr.lastLine, host: login.host, checkHint: checkHint, lines: stderr.all)
    }
}
