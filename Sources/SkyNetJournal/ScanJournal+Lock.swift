import SkyNetRuntime

extension ScanJournal {
    /// Takes the journal's exclusive lock (`flock`, not waiting), held until the descriptor
    /// closes, even by a SIGKILL. Two scans writing one journal would both run every sector.
    ///
    /// The holder is named by its PID, read from /proc/locks (Linux), so that no file beside
    /// the journal has to hold it; where that is not available the message says "another scan".
    func lock() throws(Failure) {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            guard errno == EWOULDBLOCK else { throw Self.failure(path) }
            let holder = Self.lockHolder(of: descriptor).map { "the scan with PID \($0)" } ?? "another scan"
            throw Failure(description: "journal \(path) is in use by \(holder): wait for it to end, or use another journal")
        }
    }

    /// The PID that holds a `flock` on the file open at `descriptor`, from /proc/locks: lines
    /// such as `1: FLOCK  ADVISORY  WRITE 2481 fd:01:1234567 0 EOF` (a waiter's has `->`
    /// after the number). Nil when no such line is there (or on a system without it).
    static func lockHolder(of descriptor: Int32) -> Int32? {
        var info = stat()
        guard fstat(descriptor, &info) == 0,
              let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
        else { return nil }
        let device = UInt64(info.st_dev), inode = UInt64(info.st_ino)
        // The kernel's encoding of a device number (glibc's gnu_dev_major/minor).
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK" else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, UInt64(file[0], radix: 16) == major, UInt64(file[1], radix: 16) == minor,
                  UInt64(file[2]) == inode, let pid = Int32(fields[4]), pid > 0
            else { continue }
            return pid
        }
        return nil
    }
}
