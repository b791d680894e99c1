import SkyNetRuntime

extension DescriptorPair {
    /// This process's stdin and stdout as a pair, for a protocol spoken over them
    /// (`skynet node --stdio` under an SSH login).
    ///
    /// The two are moved to new close-on-exec descriptors (3 or above) before anything else
    /// can be spawned: no child can inherit the channel, since a child holding it would keep
    /// the SSH session open after we exit. Descriptor 0 then reads /dev/null, and 1 writes to
    /// stderr, so a stray write to stdout lands in the log instead of corrupting the protocol.
    /// Call it once, first thing.
    package static func takeStandardStreams() throws(SocketError) -> DescriptorPair {
        let reading = fcntl(0, F_DUPFD_CLOEXEC, 3)
        guard reading >= 0 else { throw SocketError("dup stdin") }
        let writing = fcntl(1, F_DUPFD_CLOEXEC, 3)
        guard writing >= 0 else {
            let error = SocketError("dup stdout")
            closeCopy(reading)
            throw error
        }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0, dup2(null, 0) == 0, dup2(2, 1) == 1 else {
            let error = SocketError("redirect stdin and stdout")
            for fd in [reading, writing, null] where fd >= 0 { closeCopy(fd) }
            throw error
        }
        closeCopy(null)
        return try DescriptorPair(reading: reading, writing: writing)
    }
}

/// The C library's `close` (inside the extension, `close` names the pair's own method).
private func closeCopy(_ fd: Int32) { _ = close(fd) }
