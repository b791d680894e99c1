import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// Faults of ssh links through the real `skynet scan` and real sshd hosts: a host's
    /// sshd killed, its node stopped (SIGSTOP), its network cut, the coordinator killed or
    /// interrupted. Every task still completes once, elsewhere; nothing stays on a host.
    @Suite(.serialized, .timeLimit(.minutes(3)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct SSHFaultTests {
        static let hostWithSkynet = SSHTestHost.Options(skynet: skynetBinary.path)

        /// `scan --ssh 2/h1,2/h2 --local-capacity 0 --json …`: only the hosts run tasks.
        static func scan(over hosts: [SSHTestHost], client: SSHTestClient, _ arguments: [String]) -> [String] {
            ["scan", "--ssh", hosts.map { "2/" + $0.login }.joined(separator: ","), "--ssh-command", client.commandLine(),
             "--local-capacity", "0", "--failing-every", "0", "--quiet"] + arguments
        }

        /// Checks a finished `--json` scan of `count` tasks: exit 0, each input completed
        /// exactly once, the summary says so; returns the events.
        static func expectEveryTaskCompletedOnce(_ run: Finished, count: Int) throws -> [SSHScanHarness.Event] {
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            let events = try SSHScanHarness.events(run.stdout)
            let inputs = SSHScanHarness.events("completed", in: events).compactMap { $0["input"]?.int }
            #expect(inputs.sorted() == Array(0..<count), "\(run.stdout)")
            let summary = SSHScanHarness.events("summary", in: events).first
            #expect(summary?["completed"]?.int == count && summary?["gave_up"]?.int == 0, "\(summary?.description ?? run.stdout)")
            return events
        }

        /// The inputs whose attempt on `system` failed, and that every one of them then
        /// completed on `elsewhere` (the lost tasks ran again there).
        static func expectLostTasksRanOn(_ elsewhere: String, lostOn system: String, in events: [SSHScanHarness.Event]) -> [Int] {
            let lost = SSHScanHarness.events("retry", of: system, in: events).compactMap { $0["input"]?.int }
            var completed: [Int: String] = [:]
            for event in SSHScanHarness.events("completed", in: events) {
                guard let input = event["input"]?.int, completed[input] == nil else { continue }
                completed[input] = event["system"]?.string ?? "?"
            }
            for input in lost { #expect(completed[input] == elsewhere, "task \(input) was lost on \(system), completed by \(completed[input] ?? "none")") }
            return lost
        }

        @Test func aHostWhoseSSHDIsKilledMidScanHasItsTasksRunOnTheOtherAndIsDialledAgain() async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                let (victim, other) = (hosts[0], hosts[1])
                let arguments = Self.scan(over: hosts, client: client, ["--total", "100", "--duration", "0.2", "--json"])
                let run = try await withCoordinator(arguments) { scan in
                    try await scan.process.waitForLines(2, where: SSHScanHarness.isEvent("completed", of: victim.login))
                    await victim.killSSHD()
                    try await scan.process.waitForLine(where: SSHScanHarness.isEvent("disconnected", of: victim.login))
                    // The node saw its stdin end with the session: nothing of it stays.
                    let left = await victim.processesLeft(within: .seconds(3))
                    #expect(left.isEmpty, "\(left.described)")
                    // Back up: the link is dialled again (backoff from 0.5 s) while the scan runs.
                    try await victim.restartSSHD()
                    try await scan.process.waitForLines(2, timeout: .seconds(20), where: SSHScanHarness.isEvent("connected", of: victim.login))
                    return try await scan.process.finish(timeout: .seconds(60))
                }
                let events = try Self.expectEveryTaskCompletedOnce(run, count: 100)
                let lost = Self.expectLostTasksRanOn(other.login, lostOn: victim.login, in: events)
                #expect(!lost.isEmpty, "the victim had tasks running when its sshd was killed: \(run.stdout)")
                let reason = SSHScanHarness.events("disconnected", of: victim.login, in: events).first?["reason"]?.string ?? ""
                #expect(reason.hasPrefix("ssh: "), "\(reason)")
            }
        }

        /// Starts a scan of `sleep 30` tasks (2 a host), awaits all 4 running on the hosts, and
        /// hands the scan to `body`; the scan is stopped on every path.
        static func withLongJobsRunning<T>(on hosts: [SSHTestHost], client: SSHTestClient,
                                           _ body: (MarkedCoordinator) async throws -> T) async throws -> T {
            try await SSHScanHarness.withFolder { folder in
                let list = try SSHScanHarness.lines(Array(repeating: "30", count: 8), in: folder)
                let arguments = Self.scan(over: hosts, client: client, ["--job", "nap=sleep {}", "--inputs", list])
                return try await withCoordinator(arguments) { scan in
                    for host in hosts {
                        let running = await host.waitUntil(within: .seconds(30)) { $0.processes(named: "sleep").count == 2 }
                        try #require(running, "2 jobs on \(host.login): \(host.processes().described); \(scan.process.errorLines)")
                    }
                    return try await body(scan)
                }
            }
        }

        @Test func aCoordinatorKilledMidScanLeavesNoProcessOnItsHostsWithinThreeSeconds() async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                try await Self.withLongJobsRunning(on: hosts, client: client) { scan in
                    #expect(hosts.allSatisfy { $0.nodeProcess() != nil })
                    scan.process.send(SIGKILL)
                    let left = await processesLeft(on: hosts, within: .seconds(3))
                    #expect(left.isEmpty, "left on the hosts: \(left.mapValues(\.described))")
                    // Nor on this side: its ssh clients ended with their sessions.
                    let here = await scan.processesLeft(within: .seconds(1))
                    #expect(here.isEmpty, "left by the coordinator here: \(here.described)")
                }
            }
        }

        /// Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a lost session) on the coordinator.
        @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143)), (SIGHUP, Int32(129))])
        func aStopSignalMidScanExitsWith128PlusItAndLeavesNoProcessOnItsHosts(signal: Int32, status: Int32) async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                try await Self.withLongJobsRunning(on: hosts, client: client) { scan in
                    scan.process.send(signal)
                    let signalled = ContinuousClock.now
                    let run = try await scan.process.finish(timeout: .seconds(20))
                    #expect(run.status == status, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.lines.contains { $0.hasPrefix("Stopped: 0 completed") }, "\(run.stdout)")
                    let left = await processesLeft(on: hosts, within: max(.zero, .seconds(3) - (ContinuousClock.now - signalled)))
                    #expect(left.isEmpty, "left on the hosts 3 s after signal \(signal): \(left.mapValues(\.described))")
                    // (The group keeper, which ssh scans run, leaves just after the coordinator: under
                    // the thread sanitizer it was still there when the coordinator's exit was seen.)
                    let here = await scan.processesLeft(within: .seconds(3))
                    #expect(here.isEmpty, "left by the coordinator here: \(here.described)")
                }
            }
        }

        @Test func aHostsNodeKilledMidScanTakesItsJobsAlongAndItsTasksRunAgainAndItIsDialledAgain() async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                let victim = hosts[0]
                try await SSHScanHarness.withFolder { folder in
                    let list = try SSHScanHarness.lines(Array(repeating: "0.5", count: 40), in: folder)
                    let arguments = Self.scan(over: hosts, client: client, ["--job", "nap=sleep {}", "--inputs", list, "--json"])
                    let run = try await withCoordinator(arguments) { scan in
                        let running = await victim.waitUntil(within: .seconds(30)) { $0.processes(named: "sleep").count == 2 }
                        try #require(running, "\(victim.processes().described); \(scan.process.errorLines)")
                        let jobs = victim.processes(named: "sleep").map(\.pid)
                        let node = try #require(victim.nodeProcess(), "\(victim.processes().described)")
                        kill(node.pid, SIGKILL)
                        // Its jobs do not outlive it (their group is killed by its keeper).
                        let orphans = await HostProcesses.awaitGone(jobs, within: .seconds(3))
                        #expect(orphans.isEmpty, "jobs left by the killed node: \(orphans.described)")
                        try await scan.process.waitForLine(where: SSHScanHarness.isEvent("disconnected", of: victim.login))
                        try await scan.process.waitForLines(2, timeout: .seconds(20), where: SSHScanHarness.isEvent("connected", of: victim.login))
                        return try await scan.process.finish(timeout: .seconds(60))
                    }
                    let events = try Self.expectEveryTaskCompletedOnce(run, count: 40)
                    let lost = SSHScanHarness.events("retry", of: victim.login, in: events).compactMap { $0["input"]?.int }
                    #expect(lost.count == 2, "the 2 tasks running on the killed node: \(run.stdout)")
                    let again = SSHScanHarness.events("completed", in: events).filter { lost.contains($0["input"]?.int ?? -1) }
                    #expect(again.allSatisfy { ($0["attempt"]?.int ?? 0) >= 2 }, "\(again)")
                    let left = await processesLeft(on: hosts, within: .seconds(3))
                    #expect(left.isEmpty, "\(left.mapValues(\.described))")
                }
            }
        }

        /// An `--ssh-command` whose upload (the session running `mktemp`) sends the first MiB
        /// of the build, then holds the session open for 30 s; every other session is plain ssh.
        static func stallingUploadCommand(_ client: SSHTestClient) async throws -> String {
            let stalling = try await SSHOptionTests.installScript(
                """
                #!/bin/sh
                for word in "$@"; do
                  case "$word" in
                    *mktemp*) { head -c 1048576; exec sleep 30; } | ssh "$@"; exit $?;;
                  esac
                done
                exec ssh "$@"
                """, at: client.folder + "/stalling-ssh")
            return ([stalling] + client.commandWords().dropFirst()).joined(separator: " ")
        }

        /// Ctrl-C while `--ship` uploads the build: the upload's temporary file must not stay in
        /// the host's cache (its name never becomes the build's, but its bytes would pile up).
        @Test func ctrlCDuringAShipUploadLeavesNoPartialCopyOnTheHost() async throws {
            try await withSSHTestHosts(each: [SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)]) { hosts, client in
                let host = hosts[0]
                // An ssh whose upload stalls after its first MiB: the Ctrl-C lands mid-copy.
                let command = try await Self.stallingUploadCommand(client)
                let cache = host.home + "/.cache/skynet"
                let partial = { () -> [String] in
                    ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).filter { $0.hasPrefix(".skynet-") }
                }
                try await withCoordinator(["scan", "--ssh", host.login, "--ship", "--ssh-command", command, "--local-capacity", "0",
                                           "--total", "4", "--duration", "0.1", "--quiet"]) { scan in
                    let uploading = await host.waitUntil(within: .seconds(30)) { _ in !partial().isEmpty }
                    try #require(uploading, "no upload began: \(scan.process.lines)")
                    scan.process.send(SIGINT)
                    let run = try await scan.process.finish(timeout: .seconds(20))
                    #expect(run.status == 130, "\(run.stdout)\n\(run.stderr)")
                }
                let left = await host.processesLeft(within: .seconds(3))
                #expect(left.isEmpty, "\(left.described)")
                #expect(partial().isEmpty, "left in \(cache): \(partial())")
            }
        }
    }
}
