import Foundation
import SkyNetLocalHosts
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests.SSHLinkTests {
    /// A hundred ssh links (one sshd, logged in to a hundred times, each session running
    /// `skynet node --stdio`) hold no thread each in the coordinator: each ssh child's pipes are
    /// read on the event loops, its stderr too, and its exit is waited for there (a pidfd).
    /// A thread each for those would be over 300.
    @Test func aHundredSSHLinksHoldNoThreadEach() async throws {
        try await withSSHTestHosts(count: 1, options: .init(skynet: skynetBinary.path)) { hosts, client in
            let logins = Array(repeating: "1/" + hosts[0].login, count: 100)
            try await withLinks(logins, client: client) { _, systems, recorded in
                try await recorded.wait(for: 100, upTo: .seconds(150)) { if case .connected = $0 { true } else { false } }
                #expect(await systems.names.count == 100)
                let perLink = threadNames().filter {
                    $0.hasPrefix("skynet-reader") || $0.hasPrefix("skynet-ssh-stderr") || $0.hasPrefix("skynet-reaper")
                        || $0.hasPrefix("skynet-child")
                }
                // Other suites may run beside this one (their own children and pipes).
                #expect(perLink.count < 30, "\(perLink.count) threads of links' kinds for 100 ssh links")
            }
            #expect(await hosts[0].processesLeft(within: .seconds(10)) == [])
        }
    }
}
