import Foundation
import SkyNet
import SkyNetRuntime

/// A child's peak resident memory, sampled from `/proc/PID/status` (`VmHWM`, the high-water
/// mark of its own address space since its exec) every 10 ms until it exits.
///
/// Not `wait4`'s `ru_maxrss`: a child made with `posix_spawn` (vfork, exec) is charged at its
/// exec with the high-water mark of the address space it leaves, which is the bench's own, so
/// every child measured after the bench had grown read the bench's peak (108,748 KiB for a
/// scan that stays near 25 MB). VmHWM only rises, so the last sample misses at most 10 ms.
/// The most threads seen (`Threads`) is sampled beside it: a burst shorter than 10 ms may go
/// unseen.
final class PeakMemory: Sendable {
    private let peak = Locked((kib: 0, threads: 0, running: true))

    init(pid: Int32) {
        startThread(named: "bench-peak-rss") { [self] in
            while peak.withLock({ $0.running }) {
                let kib = statusNumber("VmHWM", of: pid), threads = statusNumber("Threads", of: pid)
                peak.withLock { state in
                    state.kib = max(state.kib, kib ?? 0)
                    state.threads = max(state.threads, threads ?? 0)
                }
                sleepOnThisThread(for: .milliseconds(10))
            }
        }
    }

    /// Stops sampling (call once the child has exited) and returns the peaks seen.
    func finish() -> (kib: Int, threads: Int) {
        peak.withLock { state in
            state.running = false
            return (state.kib, state.threads)
        }
    }
}
