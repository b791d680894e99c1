import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

extension SSHChannelTests {
    /// An ssh still logging in (no welcome yet) does not see the end of its input: closing the
    /// channel stops it at once instead of waiting 2 s for it to leave (Ctrl-C during a login
    /// took 2 s longer).
    @Test func closingBeforeTheWelcomeStopsSSHAtOnce() async throws {
        try await Self.withFakeSSH { command in
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: "exec sleep 30 </dev/null", timeout: .seconds(5), hostLog: { _ in })
            channel.connection.start(onEvent: { _ in })
            await channel.close()
            #expect(channel.child.exit.current?.reason == .signalled(SIGTERM))
        }
        // (Timed here it took 0.02 s alone, but 2.96 s with every suite running: the rule is
        // what is checked.) Closed by us before the welcome: at once; after it, or when ssh's
        // stdout ended (ssh is leaving with the status that says why): 2 s.
        #expect(SSHChannel.closingWait(stopAtOnce: nil, welcomed: false) == .zero)
        #expect(SSHChannel.closingWait(stopAtOnce: nil, welcomed: true) == .seconds(2))
        #expect(SSHChannel.closingWait(stopAtOnce: false, welcomed: false) == .seconds(2))
    }

    /// Once welcomed, ssh is given its time: the end of its input ends the node, then ssh.
    @Test func closingAfterTheWelcomeLetsSSHEndOnItsOwn() async throws {
        try await Self.withFakeSSH { command in
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: "exec cat", timeout: .seconds(5), hostLog: { _ in })
            channel.connection.start(onEvent: { _ in })
            channel.startForwarding()
            await channel.close()
            #expect(channel.child.exit.current?.reason == .exited(0))
        }
    }
}

extension SSHChannelTests {
    /// The count of a host's dropped log lines is said before `close` returns, even when the
    /// end of its stderr comes a moment after ssh's exit. (It was said by the reader thread
    /// whenever stderr ended: a scan could print its summary and exit first, and the count of
    /// 2,800 lines dropped was never seen.)
    @Test func theDroppedLinesAreCountedBeforeCloseReturns() async throws {
        try await Self.withFakeSSH { command in
            let log = Lines()
            // A process left holding stderr for 0.3 s after ssh's exit stands for a slow end.
            let remote = #"read go; i=0; while [ $i -lt 300 ]; do echo "line $i" >&2; i=$((i+1)); done; "#
                + #"sleep 0.3 </dev/null >/dev/null & echo done; exec cat"#
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: remote, timeout: .seconds(5), hostLog: log.append)
            let done = AsyncSignal<Void>()
            channel.connection.start(onEvent: { event in if case .line = event { done.fulfil(()) } })
            channel.startForwarding()
            try channel.connection.send(Array("go\n".utf8))
            try await withTimeout(.seconds(10)) { await done.value }
            await channel.close()
            let lines = log.all
            let printed = lines.filter { $0.hasPrefix("[h1] line ") }.count
            let suffix = " log lines dropped (at most 20 a second per host)"
            let dropped = lines.compactMap { line in
                line.hasSuffix(suffix) ? Int(line.dropFirst("[h1] ".count).dropLast(suffix.count)) : nil
            }.reduce(0, +)
            #expect(printed >= 200 && printed + dropped == 300, "printed \(printed), dropped \(dropped)")
        }
    }
}
