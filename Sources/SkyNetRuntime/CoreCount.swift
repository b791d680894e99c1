/// How many processors this process may run on: the default capacity of `skynet node --stdio`,
/// whose welcome then tells the coordinator how many it may use (no wire field is added for it).
package enum CoreCount {
    /// The processors of this thread's CPU affinity mask (what `nproc` and `taskset` go by: a
    /// node started under `taskset -c 0` runs one task at a time), or, where the mask cannot be
    /// read, `sysconf(_SC_NPROCESSORS_ONLN)`; kept within `1...most` (1 when neither can say).
    /// (The name is older than the mask.)
    package static func online(atMost most: Int = 1024) -> Int {
        let count = inAffinityMask() ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return max(1, min(most, count > 0 ? count : 1))
    }

    /// How many processors the calling thread's affinity mask holds (a thread's mask is what
    /// the threads and processes it starts inherit); nil where there is none to read, or when
    /// it is wider than `cpu_set_t`'s 1024 processors.
    static func inAffinityMask() -> Int? {
        #if canImport(Glibc)
        guard let call = GetAffinity.call else { return nil }
        var mask = cpu_set_t()
        guard call(0, MemoryLayout<cpu_set_t>.size, &mask) == 0 else { return nil }
        let count = withUnsafeBytes(of: &mask) { $0.reduce(0) { $0 + $1.nonzeroBitCount } }  // CPU_COUNT
        return count > 0 ? count : nil
        #else
        return nil
        #endif
    }
}

#if canImport(Glibc)
/// glibc's `sched_getaffinity`, which Swift's Glibc module hides (it needs _GNU_SOURCE), looked
/// up once, as `accept4` is.
private enum GetAffinity {
    typealias Function = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> Int32
    static let call: Function? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getaffinity").map { unsafeBitCast($0, to: Function.self) }
}
#endif
