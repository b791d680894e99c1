import Foundation
import SkyNet
import SkyNetLocalHosts
import SkyNetRuntime

/// The peak resident memory of the `skynet` nodes an ssh test host's logins start: they are
/// not our children, so they are found by the host's marker (`SSHTestHost.processes()`), and
/// each one's `VmHWM` (its high-water mark, which only rises) is read every 200 ms while it
/// lives. The last reading before a node exits misses at most 200 ms of its life.
final class MarkedNodeMemory: Sendable {
    /// The highest VmHWM seen per node (pid), and whether sampling goes on.
    private let state = Guarded((peaks: [Int32: Int](), running: true))

    init(hosts: [SSHTestHost]) {
        startThread(named: "bench-ssh-node-rss") { [self] in
            while state.withLock({ $0.running }) {
                for host in hosts {
                    for pid in host.processes() where HostProcesses.read(pid)?.name == "skynet" {
                        guard let kib = statusNumber("VmHWM", of: pid) else { continue }
                        state.withLock { $0.peaks[pid] = max($0.peaks[pid] ?? 0, kib) }
                    }
                }
                // Waits on the condition, so that `finish` ends the wait at once.
                state.wait(while: { $0.running }, deadline: .now + .milliseconds(200)) { _, _ in }
            }
        }
    }

    /// Stops sampling and returns the peak of each node seen (KiB), highest first.
    func finish() -> [Int] {
        state.withLock { state in
            state.running = false
            return state.peaks.values.sorted(by: >)
        }
    }
}
