import SkyNetRuntime

/// Descriptors 0, 1 and 2 as this process found them when it started.
///
/// One that was closed (`skynet node --stdio <&-`) is opened on /dev/null first thing in
/// `main`, before the Swift runtime and Dispatch make descriptors of their own: the lowest
/// free number goes to the next one made, and an eventfd or epoll descriptor on 0 or 1 was
/// taken for stdin or stdout (a stdio node served its own runtime's epoll, and exited 0
/// without a word). Stdout printed to /dev/null is lost, as it would be on a closed one;
/// `--stdio`, which has no channel then, refuses instead (`closedAtStart`).
enum StandardDescriptors {
    /// Those of 0, 1 and 2 that were closed at start (each now /dev/null, where it could be opened).
    static var closedAtStart: Set<Int32> { closed.withLock { $0 } }
    private static let closed = Locked<Set<Int32>>([])

    /// Opens /dev/null on each of 0, 1 and 2 that is closed. Call it before anything else.
    static func openClosedOnes() {
        var found = Set<Int32>()
        // In order: 0 and 1 are open when 2 is looked at, so each open takes the number it fills.
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            found.insert(fd)
            let null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY)
            if null >= 0 && null != fd {
                _ = dup2(null, fd)
                _ = close(null)
            }
        }
        closed.withLock { $0 = found }
    }
}
