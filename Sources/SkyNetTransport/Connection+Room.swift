import SkyNetRuntime

extension Connection {
    /// Blocks the calling thread (a file pump's: never one of the pool) until fewer than
    /// `bytes` are queued for the peer; true then, false once the connection is ending or has
    /// ended (or has not started). A sender that sends only after this returns keeps at most
    /// `bytes` plus its one line queued (docs/PROTOCOL.md, "Files": back pressure).
    package func waitForRoom(below bytes: Int) -> Bool {
        state.wait(while: { state in
            if case .flushing(let queue) = state { return queue.count >= bytes }
            return false
        }) { state, _ in
            switch state {
            case .open, .flushing: true
            case .notStarted, .closing, .closed: false
            }
        }
    }

    /// Bytes sent to the peer and read from it since the connection started: what moves while
    /// a long transfer keeps a pong waiting. Sent bytes still in the kernel's send queue do not
    /// count (when the stream can tell): on a slow link the queue takes a megabyte at once and
    /// then drains for seconds, with the ping behind it, and only the draining shows the peer
    /// alive. (Under the state's lock: the descriptor is closed only once `closed`.)
    package var progress: (sent: UInt64, received: UInt64) {
        let unsent: Int = state.withLock { state in
            if case .closed = state { return 0 }
            return stream.unsentBytes ?? 0
        }
        let sent = sentBytes.load(ordering: .relaxed)
        return (sent - min(sent, UInt64(max(0, unsent))), receivedBytes.load(ordering: .relaxed))
    }
}
