/// How many processors this host has online: the default capacity of `skynet node --stdio`,
/// whose welcome then tells the coordinator the host's cores (no wire field is added for it).
public enum CoreCount {
    /// `sysconf(_SC_NPROCESSORS_ONLN)`, kept within `1...most` (1 when the C library cannot say).
    public static func online(atMost most: Int = 1024) -> Int {
        let count = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return max(1, min(most, count > 0 ? Int(count) : 1))
    }
}
