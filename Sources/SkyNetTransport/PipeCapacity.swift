import SkyNetRuntime
import Synchronization

/// Bigger pipes for a pair of them that carries a link (an ssh link's child, a `--stdio`
/// node): with Linux's default of 64 KiB in flight, a 256 KiB file chunk crosses each pipe in
/// four turns of both processes, and files over ssh moved at 0.74× `scp`; at 1 MiB, 0.82×
/// (W14). A user's pipes together have a soft limit (`/proc/sys/fs/pipe-user-pages-soft`, 64
/// MiB by default) past which every new pipe of the user gets 2 pages, so a process raises
/// at most `budget` bytes of pipes at once (`shared`: 8 MiB, four links); the others keep the
/// default.
final class PipeCapacity: Sendable {
    /// Bytes a raised pipe holds.
    static let raised = 1 << 20
    /// The process's budget.
    static let shared = PipeCapacity(budget: 8 << 20)

    let budget: Int
    private let inUse = Atomic<Int>(0)

    init(budget: Int) {
        self.budget = budget
    }

    /// Raises the pipes among `descriptors` to `raised` bytes while the budget allows; returns
    /// the bytes taken from it, to give back (`giveBack`) when they are closed.
    func raise(_ descriptors: [Int32]) -> Int {
        #if os(Linux)
        // One descriptor per pipe (both ends of one pipe are one buffer), by its inode.
        var pipes: [UInt: Int32] = [:]
        for fd in descriptors {
            var info = stat()
            if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO { pipes[UInt(info.st_ino)] = fd }
        }
        guard !pipes.isEmpty else { return 0 }
        let wanted = pipes.count * Self.raised
        var current = inUse.load(ordering: .relaxed)
        while true {
            guard current + wanted <= budget else { return 0 }
            let (exchanged, original) = inUse.compareExchange(expected: current, desired: current + wanted, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        // Best effort: a pipe that cannot grow (over the user's hard limit) keeps its size.
        for fd in pipes.values { _ = fcntl(fd, Self.setPipeSize, Int32(Self.raised)) }
        return wanted
        #else
        return 0
        #endif
    }

    /// Gives back what `raise` took.
    func giveBack(_ bytes: Int) {
        if bytes > 0 { inUse.subtract(bytes, ordering: .relaxed) }
    }

    /// `F_SETPIPE_SZ`, which Swift's Glibc module does not export (it needs _GNU_SOURCE).
    private static let setPipeSize: Int32 = 1031
}
