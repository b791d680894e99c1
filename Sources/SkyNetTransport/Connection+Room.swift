import SkyNetRuntime

extension Connection {
    /// Blocks the calling thread (a file pump's: never one of the pool) until fewer than
    /// `bytes` are queued for the peer; true then, false once the connection is ending or has
    /// ended (or has not started). A sender that sends only after this returns keeps at most
    /// `bytes` plus its one line queued (docs/PROTOCOL.md, "Files": back pressure).
    public func waitForRoom(below bytes: Int) -> Bool {
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

    /// Bytes sent to the peer and read from it since the connection started (counted as the
    /// stream takes and gives them): what moves while a long transfer keeps a pong waiting.
    public var progress: (sent: UInt64, received: UInt64) {
        (sentBytes.load(ordering: .relaxed), receivedBytes.load(ordering: .relaxed))
    }
}
