import SkyNetRuntime

/// A `ByteStream` that can tell, without reading, that nobody can write to its input any more.
/// A `Connection` that holds back reading (back pressure) asks it, so that a peer that closed
/// its end ends the connection even though the bytes it sent before are never read.
///
/// A `Socket` is not one: TCP reports `POLLHUP` only once both ways are shut (a peer's
/// half-close is no hang-up), and a peer that closed with replies unread resets the
/// connection, which fails the blocked send of the replies instead.
package protocol InputHangUpReporting: ByteStream {
    /// Whether the input has hung up: no writer is left, though unread bytes may remain.
    func inputHasHungUp() -> Bool
}

extension DescriptorPair: InputHangUpReporting {
    /// A pipe reports `POLLHUP` once its last writer closed, unread bytes or not (a terminal
    /// once it hung up, a socket once its peer closed both ways); `POLLERR` is a broken input.
    /// A regular file or /dev/null reports neither: their end is a read of 0, as always.
    package func inputHasHungUp() -> Bool {
        var polled = pollfd(fd: reading, events: 0, revents: 0)  // POLLHUP and POLLERR need no asking
        while true {
            let ready = poll(&polled, 1, 0)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0 && polled.revents & Int16(POLLHUP | POLLERR) != 0
        }
    }
}
