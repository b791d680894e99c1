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
