import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests.SSHTestHostTests {
    /// A session's job whose environment does not show the marker (what one reading of /proc
    /// sees of a process mid-exec, made lasting here with `env -i`), left to init: `stop()`
    /// still kills it, by the session it kept, and returns only once it is gone.
    @Test func stopKillsASessionsJobWhoseMarkerCannotBeRead() async throws {
        let host = try await SSHTestHost.start()
        var session: ChildProcess?
        var hidden: HostProcess?
        func cleanUp() async {
            await session?.stop(grace: .zero)
            await host.stop()
            // Never leave it running when the test fails: it is ours only while it still is that sleep.
            if let hidden, let now = HostProcesses.read(hidden.pid), now.parent == hidden.parent, now.name == "sleep" {
                kill(hidden.pid, SIGKILL)
            }
        }
        do {
            let remote = "( exec env -i /bin/sleep 122 & echo $! ); echo $$; exec sleep 121"
            let (ssh, started, log) = try await Self.session(on: host, running: remote)
            session = ssh
            try #require(started.count == 2, "\(log)")
            // Once it runs sleep (env -i has exec'd), its environment is empty.
            let deadline = ContinuousClock.now + .seconds(10)
            while HostProcesses.read(started[0])?.name != "sleep", ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            let job = try #require(HostProcesses.read(started[0]))
            hidden = job
            #expect(job.name == "sleep")
            #expect(!host.processes().contains(job.pid), "the job's marker is readable")
            #expect(job.parent != started[1])

            await host.stop()
            #expect(started.allSatisfy { HostProcesses.read($0) == nil || HostProcesses.read($0)?.state == "Z" },
                    "left: \(started.compactMap(HostProcesses.read))")
            #expect(HostProcesses.carrying(host.markerEntry).isEmpty)
            _ = try await withTimeout(.seconds(5)) { await ssh.exit.value }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }
}
