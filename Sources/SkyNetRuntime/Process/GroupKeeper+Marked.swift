extension GroupKeeper {
    /// SIGKILLs every process (and the group it leads) whose environment holds
    /// `SKYNET_OWNER_PID=owner`: the jobs of an owner that died before it could list them.
    /// Twice, 50 ms apart, for a child that was still between its spawn and its exec at the
    /// first look. Linux only (it reads /proc); elsewhere the keeper has only its list.
    static func killMarked(owner: pid_t) {
        #if os(Linux)
        let marker = Array("\(ownerVariable)=\(owner)".utf8)
        for round in 0..<2 {
            if round > 0 { usleep(50_000) }  // the keeper's own thread, in a process of its own
            for pid in processIDs() where pid != getpid() && environment(of: pid, holds: marker) {
                if getpgid(pid) == pid { _ = kill(-pid, SIGKILL) }
                _ = kill(pid, SIGKILL)
            }
        }
        #endif
    }

    #if os(Linux)
    /// The ids of the processes /proc lists now.
    private static func processIDs() -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var ids: [pid_t] = []
        while let entry = readdir(directory) {
            let name = String(decoding: directoryEntryName(entry), as: UTF8.self)
            if let pid = pid_t(name), pid > 1 { ids.append(pid) }
        }
        return ids
    }

    /// Whether `pid`'s environment (at most its first 256 KiB) has `marker` as one variable.
    private static func environment(of pid: pid_t, holds marker: [UInt8]) -> Bool {
        let fd = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes: [UInt8] = []
        readChunks(from: fd, chunkSize: 16_384) { chunk in
            bytes += chunk
            return bytes.count < 1 << 18
        }
        return bytes.split(separator: 0).contains { $0.elementsEqual(marker) }
    }
    #endif
}
