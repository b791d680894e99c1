import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// A host that stops answering without its link ending: its node stopped (SIGSTOP), its
/// network cut. Pings notice it; its tasks run elsewhere.
extension ProcessTests.SSHFaultTests {
    @Test func aStoppedNodeIsNoticedByPingsAndItsTasksRunOnTheOtherHost() async throws {
        try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
            let (victim, other) = (hosts[0], hosts[1])
            try await SSHScanHarness.withFolder { folder in
                let list = try SSHScanHarness.lines(Array(repeating: "0.3", count: 30), in: folder)
                let arguments = Self.scan(over: hosts, client: client, ["--timeout", "1", "--job", "nap=sleep {}", "--inputs", list, "--json"])
                let stopped = Locked<Int32?>(nil)
                let coordinatorLeft = Locked<[Int32]>([])
                do {
                    let run: Finished = try await withCoordinator(arguments) { scan in
                        try await scan.process.waitForLine(where: SSHScanHarness.isEvent("completed", of: victim.login))
                        let node = try #require(victim.nodeProcess(), "\(victim.processes().described)")
                        stopped.withLock { $0 = node.pid }
                        kill(node.pid, SIGSTOP)
                        let run = try await scan.process.finish(timeout: .seconds(60))
                        // (The group keeper, which ssh scans run, leaves just after the coordinator.)
                        let here = await scan.processesLeft(within: .seconds(3))
                        coordinatorLeft.withLock { $0 = here }
                        return run
                    }
                    let events = try Self.expectEveryTaskCompletedOnce(run, count: 30)
                    #expect(!SSHScanHarness.events("unresponsive", of: victim.login, in: events).isEmpty, "\(run.stdout)")
                    let lost = Self.expectLostTasksRanOn(other.login, lostOn: victim.login, in: events)
                    #expect(!lost.isEmpty, "\(run.stdout)")
                    let errors = SSHScanHarness.events("retry", of: victim.login, in: events).compactMap { $0["error"]?.string }
                    #expect(errors.allSatisfy { $0 == "\(victim.login) did not answer a ping within 1 s" }, "\(errors)")
                    // The scan is over while the node is still stopped: no ssh client of it may stay here.
                    let here = coordinatorLeft.withLock { $0 }
                    #expect(here.isEmpty, "left by the coordinator here: \(here.described)")
                } catch {
                    if let pid = stopped.withLock({ $0 }) { kill(pid, SIGCONT) }
                    throw error
                }
                // Woken, the node finds its stdin ended and leaves with its jobs.
                if let pid = stopped.withLock({ $0 }) { kill(pid, SIGCONT) }
                let left = await victim.processesLeft(within: .seconds(3))
                #expect(left.isEmpty, "left on the stopped host once woken: \(left.described)")
            }
        }
    }

    @Test func aStoppedNodeThatWakesIsSaidResponsiveAndRunsTasksAgain() async throws {
        try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
            let victim = hosts[0]
            try await SSHScanHarness.withFolder { folder in
                let list = try SSHScanHarness.lines(Array(repeating: "0.3", count: 80), in: folder)
                let arguments = Self.scan(over: hosts, client: client, ["--timeout", "1", "--job", "nap=sleep {}", "--inputs", list, "--json"])
                let stopped = Locked<Int32?>(nil)
                defer { if let pid = stopped.withLock({ $0 }) { kill(pid, SIGCONT) } }
                let run = try await withCoordinator(arguments) { scan in
                    try await scan.process.waitForLine(where: SSHScanHarness.isEvent("completed", of: victim.login))
                    let node = try #require(victim.nodeProcess(), "\(victim.processes().described)")
                    stopped.withLock { $0 = node.pid }
                    kill(node.pid, SIGSTOP)
                    try await scan.process.waitForLine(where: SSHScanHarness.isEvent("unresponsive", of: victim.login))
                    kill(node.pid, SIGCONT)
                    try await scan.process.waitForLine(where: SSHScanHarness.isEvent("responsive", of: victim.login))
                    return try await scan.process.finish(timeout: .seconds(60))
                }
                let events = try Self.expectEveryTaskCompletedOnce(run, count: 80)
                let time = { (event: SSHScanHarness.Event) in event["time"]?.number ?? -1 }
                let awake = SSHScanHarness.events("responsive", of: victim.login, in: events).first.map(time) ?? .infinity
                let afterwards = SSHScanHarness.events("completed", of: victim.login, in: events).filter { time($0) > awake }
                #expect(!afterwards.isEmpty, "the woken host got no task: \(run.stdout)")
                #expect(SSHScanHarness.events("disconnected", of: victim.login, in: events).isEmpty, "\(run.stdout)")
            }
        }
    }

    @Test(.enabled(if: NetworkNamespace.isAvailable, "needs root and ip for network namespaces (apt-get install iproute2)"))
    func aNetworkCutToAHostMidScanHasItsTasksRunOnTheOtherHost() async throws {
        try await withNetworkNamespace { cutOff in
            try await withNetworkNamespace { kept in
                let options = [SSHTestHost.Options.inside(cutOff, skynet: skynetBinary.path), .inside(kept, skynet: skynetBinary.path)]
                try await withSSHTestHosts(each: options) { hosts, client in
                    let (victim, other) = (hosts[0], hosts[1])
                    try await SSHScanHarness.withFolder { folder in
                        let list = try SSHScanHarness.lines(Array(repeating: "0.3", count: 30), in: folder)
                        let arguments = Self.scan(over: hosts, client: client, ["--timeout", "1", "--job", "nap=sleep {}", "--inputs", list, "--json"])
                        let run = try await withCoordinator(arguments) { scan in
                            try await scan.process.waitForLine(where: SSHScanHarness.isEvent("completed", of: victim.login))
                            try await cutOff.cut()
                            return try await scan.process.finish(timeout: .seconds(60))
                        }
                        let events = try Self.expectEveryTaskCompletedOnce(run, count: 30)
                        #expect(!SSHScanHarness.events("unresponsive", of: victim.login, in: events).isEmpty, "\(run.stdout)")
                        let lost = Self.expectLostTasksRanOn(other.login, lostOn: victim.login, in: events)
                        #expect(!lost.isEmpty, "\(run.stdout)")
                        // Mended, what the session left learns the channel is gone and leaves: when
                        // the host's next retransmission reaches the coordinator's side and gets a
                        // reset. TCP doubles that wait while the cut lasts, so the longer the scan
                        // ran on after the cut (a slow machine, a sanitizer), the later it comes.
                        try await cutOff.mend()
                        let left = await victim.processesLeft(within: .seconds(60))
                        #expect(left.isEmpty, "left on the cut host 60 s after the link was mended: \(left.described)")
                    }
                }
            }
        }
    }
}
