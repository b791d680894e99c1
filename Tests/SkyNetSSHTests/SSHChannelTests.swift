import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// `SSHChannel` over a fake `ssh`: a script that drops the options up to `--` and the host, then
/// runs the remote command with `/bin/sh -c` (a test may run a shell; the product never does).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SSHChannelTests {
    static func withFakeSSH<T>(_ body: (SSHCommand) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-fake-ssh-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let source = folder + "/ssh.txt", script = folder + "/ssh"
        try """
            #!/bin/sh
            while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
            shift 2
            exec /bin/sh -c "$1"
            """.write(toFile: source, atomically: true, encoding: .utf8)
        // Copied by `cp`, not written here: a file this process has open for writing is also
        // open in any child another test spawns meanwhile, until that child execs, and exec of
        // the file then fails (ETXTBSY).
        var options = ChildProcess.Options(arguments: [source, script])
        options.searchPath = true
        let copy = try await ChildProcess.spawn("cp", options).exit.value
        guard copy.reason == .exited(0), chmod(script, 0o755) == 0 else { throw ChildProcessError("cp \(source)", code: EIO) }
        return try await body(SSHCommand(words: [script]))
    }

    final class Lines: Sendable {
        let lines = Locked<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Before the welcome the host's stderr is only kept (what ssh says of a failed login is
    /// reported once, with the failure); once welcomed, the kept lines go to the log first.
    @Test func theChannelCarriesLinesAndStderrComesBackPrefixedWithoutCROnceWelcomed() async throws {
        try await Self.withFakeSSH { command in
            let log = Lines()
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: #"printf 'ssh says\r\nnode\tlog\n' >&2; exec cat"#,
                                                    timeout: .seconds(5), hostLog: log.append)
            let received = Lines()
            let echoed = AsyncSignal<Void>()
            channel.connection.start(onEvent: { event in
                if case .line(let line) = event { received.append(String(decoding: line, as: UTF8.self)); echoed.fulfil(()) }
            })
            try channel.connection.send(Array("hello\n".utf8))
            try await withTimeout(.seconds(10)) { await echoed.value }
            #expect(received.all == ["hello"])
            #expect(log.all == [])  // the echo stands for the welcome, not yet told to the channel
            channel.startForwarding()
            await channel.close()
            #expect(channel.child.exit.current?.reason == .exited(0))  // EOF reached cat: no signal needed
            try await withTimeout(.seconds(5)) { await channel.stderr.ended.value }
            #expect(log.all == ["[h1] ssh says", #"[h1] node\x09log"#])
        }
    }

    @Test func aRefusedLoginIsClassifiedFromTheLastLineAndNotAlsoLogged() async throws {
        try await Self.withFakeSSH { command in
            let log = Lines()
            let remote = #"echo "debug1: trying" >&2; printf 'root@h: Permission denied (publickey).\r\n' >&2; exit 255"#
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command, remote: remote,
                                                    timeout: .seconds(5), hostLog: log.append)
            channel.connection.start(onEvent: { _ in })
            let failure = await channel.failure(after: PeerDisconnected(peer: "h1", reason: "closed"), answerBound: .seconds(5))
            #expect(failure as? SSHFailure == SSHFailure(kind: .login, reason: "ssh: Permission denied (publickey)",
                                                          fix: "check the login with: \(command.words[0]) h true"))
            try await withTimeout(.seconds(5)) { await channel.stderr.ended.value }
            #expect(log.all == [])
            await channel.close()
        }
    }

    /// A chatty host once welcomed: 200 lines at once, then 20 a second, and a count of the rest.
    @Test func aFloodFromAWelcomedHostIsCut() async throws {
        try await Self.withFakeSSH { command in
            let log = Lines()
            let remote = #"read go; i=0; while [ $i -lt 400 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 0"#
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command, remote: remote,
                                                    timeout: .seconds(5), hostLog: log.append)
            channel.connection.start(onEvent: { _ in })
            channel.startForwarding()
            try channel.connection.send(Array("go\n".utf8))
            try await withTimeout(.seconds(5)) { await channel.stderr.ended.value }
            let lines = log.all
            #expect(lines.prefix(200) == ArraySlice((0..<200).map { "[h1] line \($0)" }))
            #expect(lines.count < 230, "\(lines.count) lines let through")
            #expect(lines.last?.hasPrefix("[h1] ") == true && lines.last?.hasSuffix("dropped (at most 20 a second per host)") == true, "\(lines.suffix(3))")
            await channel.close()
        }
    }

    @Test func aNodeThatNeverAnswersIsClosedAndSaidSo() async throws {
        try await Self.withFakeSSH { command in
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: "exec sleep 30", timeout: .seconds(5), hostLog: { _ in })
            channel.connection.start(onEvent: { _ in })
            let failure = await channel.failure(after: TimeoutError(), answerBound: .seconds(10))
            #expect(failure as? SSHFailure == SSHFailure(kind: .noAnswer, reason: "no answer from skynet node within 10 s", fix: ""))
            #expect(channel.child.exit.current != nil)  // closed and reaped
        }
    }

    /// What a link does when no welcome came in time: it closes the connection, which stops ssh,
    /// and ssh exits 255 on SIGTERM (as this fake does). That exit is ours, not a failed login.
    @Test func aNodeThatNeverAnswersIsSaidSoOnceTheLinkHasClosedTheChannel() async throws {
        try await Self.withFakeSSH { command in
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: #"trap "exit 255" TERM; while :; do sleep 0.1; done"#,
                                                    timeout: .seconds(5), hostLog: { _ in })
            channel.connection.start(onEvent: { _ in })
            channel.connection.close()
            let failure = await channel.failure(after: TimeoutError(), answerBound: .seconds(10))
            #expect(failure as? SSHFailure == SSHFailure(kind: .noAnswer, reason: "no answer from skynet node within 10 s", fix: ""))
            #expect(channel.child.exit.current != nil)  // closed and reaped
        }
    }

    /// (Not set in this process: children of tests running beside this one would inherit it.)
    @Test func noTokenReachesSSHsEnvironment() {
        let ours = ["SKYNET_TOKEN": "secret", "SKYNET_TOKEN_FILE": "/secret/path", "PATH": "/usr/bin", "HOME": "/h"]
        #expect(SSHChannel.environment(from: ours) == ["PATH": "/usr/bin", "HOME": "/h"])
    }
}
