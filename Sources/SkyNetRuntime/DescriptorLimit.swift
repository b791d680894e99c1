/// The process's limit on open descriptors (RLIMIT_NOFILE).
package enum DescriptorLimit {
    /// Raises the soft limit to the hard limit, so a node can hold as many connections as the
    /// system allows it. Call it first thing at process start; returns the new soft limit.
    @discardableResult
    package static func raiseToMaximum() -> Int {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            #if canImport(Darwin)
            // Darwin refuses a soft limit above OPEN_MAX even when the hard limit is unlimited.
            raised.rlim_cur = min(limit.rlim_max, rlim_t(OPEN_MAX))
            #endif
            _ = setrlimit(resourceNumber, &raised)
        }
        return current
    }

    /// The soft limit now in force.
    package static var current: Int {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else { return -1 }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is the largest value: clamped to Int.max
    }

    /// What a person should know when EMFILE or ENFILE struck: the limit and what to do.
    package static func hint(for code: Int32) -> String {
        if code == ENFILE { return " (the system's table of open files is full; close programs or raise fs.file-max)" }
        let limit = current
        let shown = limit == Int.max ? "unlimited" : String(limit)
        return " (this process may open \(shown) descriptors; raise the limit with ulimit -n)"
    }

    #if canImport(Glibc)
    private static let resourceNumber = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNumber = RLIMIT_NOFILE
    #endif
}
