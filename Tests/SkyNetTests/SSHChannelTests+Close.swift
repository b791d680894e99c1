import Foundation
import Testing
@testable import SkyNetCluster
@testable import SkyNetRuntime

extension SSHChannelTests {
    /// An ssh still logging in (no welcome yet) does not see the end of its input: closing the
    /// channel stops it at once instead of waiting 2 s for it to leave (Ctrl-C during a login
    /// took 2 s longer).
    @Test func closingBeforeTheWelcomeStopsSSHAtOnce() async throws {
        try await Self.withFakeSSH { command in
            let channel = try await SSHChannel.open(name: "h1", login: SSHLogin(host: "h"), command: command,
                                                    remote: "exec sleep 30 </dev/null", timeout: .seconds(5), hostLog: { _ in })
            channel.connection.start(onEvent: { _ in })
            let start = ContinuousClock.now
            await channel.close()
            #expect(ContinuousClock.now - start < .milliseconds(1500))
            #expect(channel.child.exit.current?.reason == .signalled(SIGTERM))
        }
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
