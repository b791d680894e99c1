import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTestSupport
@testable import SkyNetTransport
@testable import SkyNetWork

/// sd_notify's datagram protocol as written here: both address forms reach a bound socket,
/// the watchdog interval, addresses refused with a reason, and jobs kept off the channel.
@Suite struct ServiceNotifierTests {
    /// Log lines, collected.
    private final class Lines: Sendable {
        let lines = Locked<[String]>([])
        var log: @Sendable (String) -> Void { { [lines] line in lines.withLock { $0.append(line) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    private func deliversToABoundSocket(abstract: Bool) async throws {
        let socket = try NotifySocket(abstract: abstract)
        let lines = Lines()
        let notifier = try #require(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": socket.address], log: lines.log))
        #expect(notifier.notify(["READY=1", "STATUS=accepting:\n0/4 running"]))
        #expect(await socket.wait { $0 == "READY=1\nSTATUS=accepting: 0/4 running" })
        #expect(notifier.notify(["WATCHDOG=1"]))
        #expect(await socket.wait { $0 == "WATCHDOG=1" })
        await socket.close()
        #expect(socket.datagrams == ["READY=1\nSTATUS=accepting: 0/4 running", "WATCHDOG=1"])
        #expect(lines.all.isEmpty)
    }

    @Test func aPathAddressReachesTheSocketBoundThere() async throws {
        try await deliversToABoundSocket(abstract: false)
    }

    @Test func anAbstractAddressReachesTheSocketOfExactlyThatName() async throws {
        try await deliversToABoundSocket(abstract: true)
    }

    @Test func withoutNotifySocketThereIsNoNotifierAndNothingIsLogged() {
        let lines = Lines()
        #expect(ServiceNotifier.fromEnvironment([:], log: lines.log) == nil)
        #expect(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": ""], log: lines.log) == nil)
        #expect(lines.all.isEmpty)
    }

    @Test(arguments: ["run/systemd/notify", "notify", "@", "/" + String(repeating: "a", count: 107), "@" + String(repeating: "b", count: 107)])
    func anUnusableAddressGivesNoNotifierAndOneLineSayingWhy(address: String) {
        let lines = Lines()
        #expect(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": address], log: lines.log) == nil)
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains("NOTIFY_SOCKET") == true)
    }

    @Test func anAddressOfTheMostBytesThatFitIsTaken() throws {
        let longest = "/" + String(repeating: "a", count: UnixSocketAddress.maxLength - 1)
        #expect(UnixSocketAddress.maxLength == 107)
        #expect(try UnixSocketAddress(longest).description == longest)
        #expect(try UnixSocketAddress("@" + String(repeating: "b", count: 106)).description.count == 107)
    }

    @Test func theWatchdogIsDueEveryHalfOfWatchdogUsec() throws {
        let socket = "@skynet-test-unbound-\(UUID().uuidString.prefix(8))"
        let notifier = try #require(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": socket, "WATCHDOG_USEC": "200000"]))
        #expect(notifier.watchdogInterval == .milliseconds(100))
        let ours = ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": socket, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": String(getpid())])
        #expect(ours?.watchdogInterval == .milliseconds(100))
        #expect(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": socket])?.watchdogInterval == nil)
    }

    @Test func aWatchdogMeantForAnotherProcessOrOfNoTimeIsNone() {
        let nobody: @Sendable (String) -> Void = { _ in }
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"], pid: 4242, log: nobody) == nil)
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "4242"], pid: 4242, log: nobody) == .milliseconds(100))
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "0"], pid: 4242, log: nobody) == nil)
        // A WATCHDOG_PID that names no process is said once (it turned the watchdog off silently).
        for garbage in ["garbage", "0", "-1", "4242x"] {
            let said = Locked<[String]>([])
            #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "200000", "WATCHDOG_PID": garbage], pid: 4242,
                                                     log: { line in said.withLock { $0.append(line) } }) == nil)
            #expect(said.withLock { $0 } == ["No watchdog: WATCHDOG_PID is not a process ID: \(garbage)"])
        }
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": String(UInt64.max)], pid: 4242, log: nobody) == nil)
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": String(UInt64.max - 1)], pid: 4242, log: nobody) == .seconds(43_200))
        let lines = Lines()
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "-5"], pid: 4242, log: lines.log) == nil)
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "30s"], pid: 4242, log: lines.log) == nil)
        #expect(lines.all.count == 2)
    }

    /// A `WATCHDOG_USEC` so short that half of it is under 10 ms (1 µs would be no wait at all:
    /// a hot loop) pings every 10 ms, and one line says so.
    @Test(arguments: ["1", "2", "999", "19999"])
    func aWatchdogShorterThanTheFloorPingsEveryTenMillisecondsAndSaysSoOnce(text: String) {
        let lines = Lines()
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": text], pid: 4242, log: lines.log) == .milliseconds(10))
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains("WATCHDOG_USEC=\(text)") == true, "\(lines.all)")
    }

    @Test func aWatchdogOfTwentyMillisecondsOrMoreIsTakenAsItIsAndSaysNothing() {
        let lines = Lines()
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "20000"], pid: 4242, log: lines.log) == .milliseconds(10))
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "20002"], pid: 4242, log: lines.log) == .microseconds(10_001))
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "86400000000"], pid: 4242, log: lines.log) == .seconds(43_200))
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": "86400000002"], pid: 4242, log: lines.log) == .seconds(43_200))
        #expect(lines.all.isEmpty, "\(lines.all)")
    }

    /// Garbage (and a number past UInt64) is no watchdog, each said in one line.
    @Test(arguments: ["garbage", " 200000", "200000 ", "0x30", "1e6", "+", "-1", "99999999999999999999999"])
    func aWatchdogUsecThatIsNoNumberIsNoWatchdogAndSaysSo(text: String) {
        let lines = Lines()
        #expect(ServiceNotifier.watchdogInterval(["WATCHDOG_USEC": text], pid: 4242, log: lines.log) == nil)
        #expect(lines.all.count == 1, "\(lines.all)")
    }

    @Test func aFailedSendReturnsFalseAndIsLoggedOnce() throws {
        let lines = Lines()
        // No one has bound this name: each send is refused.
        let address = "@skynet-test-nobody-\(UUID().uuidString.prefix(8))"
        let notifier = try #require(ServiceNotifier.fromEnvironment(["NOTIFY_SOCKET": address], log: lines.log))
        #expect(!notifier.notify(["READY=1"]))
        #expect(!notifier.notify(["WATCHDOG=1"]))
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains(address) == true)
    }

    @Test func aCommandJobInheritsNoneOfSystemdsVariablesNorTheToken() async throws {
        let environment = ProcessInfo.processInfo.environment.merging([
            "NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1",
            "CREDENTIALS_DIRECTORY": "/run/credentials/skynet-node.service", "SKYNET_TOKEN": "0123456789abcdef",
            "SKYNET_KEPT": "kept",
        ]) { $1 }
        let command = try CommandTemplate(
            "sh -c 'echo ${NOTIFY_SOCKET-none} ${WATCHDOG_USEC-none} ${WATCHDOG_PID-none} ${CREDENTIALS_DIRECTORY-none} ${SKYNET_TOKEN-none} ${SKYNET_KEPT-none}'")
        let job = CommandJob(name: "env", command: command, maxOutput: 4096, killGrace: .seconds(2), environment: environment)
        let output = try await withTimeout(.seconds(30)) { try await job.run(JobRequest(sector: 0, input: "x")) }
        #expect(output == "none none none none none kept")  // the input is `sh -c`'s $0
    }
}
