import SkyNetRuntime

/// One Server-Sent Events frame, encoded: `event: NAME\ndata: LINE\n…\n\n`.
enum EventFrame {
    /// Encodes a frame. Newlines in `data` become several `data:` lines (the browser joins
    /// them back with "\n"); CR and LF are removed from the event name, which cannot hold them.
    static func encode(event: String, data: String) -> [UInt8] {
        let name = event.filter { $0 != "\r" && $0 != "\n" && $0 != "\r\n" }
        var text = "event: \(name)\n"
        for line in data.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            text += "data: \(line)\n"
        }
        return Array((text + "\n").utf8)
    }

    /// A comment line: EventSource ignores it; it keeps proxies and idle timers from closing.
    static let keepalive: [UInt8] = Array(": keepalive\n\n".utf8)

    /// Tells a client that lagged how many frames it missed (a comment: the page ignores it).
    static func skipped(_ count: Int) -> [UInt8] { Array(": skipped \(count) frames\n\n".utf8) }
}

/// The bytes waiting for one event-stream client, and whether it is over. Frames go in from
/// the publisher (never waiting); the client's connection takes them out on its loop
/// (`takeNow`) and sends them. `wake` tells the connection that bytes wait, or that the stream
/// is over: once, until it takes again, so a busy publisher costs no wake-up per frame.
///
/// The buffer is bounded (`limit` bytes). A frame that would overflow it makes the client
/// SKIP: its whole backlog is replaced by `: skipped N frames` and the latest snapshot
/// frame, so a slow browser jumps to the current state instead of slowing the publisher or
/// growing memory. Frames published between that snapshot and the skip are lost to it.
final class EventStreamClient: Sendable {
    private struct State {
        var pending: [UInt8]
        /// Frames counted in `pending` (for the skip note).
        var pendingFrames = 0
        var closed = false
        /// Ends the stream once what is pending has been taken (a server stopping with grace).
        var finishing = false
        var skips = 0
        /// `wake` was called and the connection has not taken since.
        var woken = false

        /// Whether to call `wake` now: not while an earlier call has not been answered.
        mutating func wakeOnce() -> Bool {
            defer { woken = true }
            return !woken
        }
    }

    /// What `takeNow` found.
    enum Taken {
        case bytes([UInt8])
        case nothing
        /// Closed, or finishing with nothing left.
        case over
    }

    private let state: Guarded<State>
    let limit: Int
    private let wake: @Sendable () -> Void

    init(first: [UInt8], limit: Int, wake: @escaping @Sendable () -> Void) {
        state = Guarded(State(pending: first))
        self.limit = limit
        self.wake = wake
    }

    /// Queues a frame without waiting; on overflow skips to `snapshot` (see the type's doc).
    func enqueue(_ frame: [UInt8], snapshot: [UInt8]?) {
        let wakeNow = state.withLock { state -> Bool in
            guard !state.closed, !state.finishing else { return false }
            if state.pending.count + frame.count <= limit {
                state.pending += frame
                state.pendingFrames += 1
            } else {
                // The frame just published may be the snapshot itself: then it is sent once.
                state.pending = EventFrame.skipped(state.pendingFrames + 1) + (snapshot ?? [])
                state.pendingFrames = snapshot == nil ? 0 : 1
                state.skips += 1
            }
            return state.wakeOnce()
        }
        if wakeNow { wake() }
    }

    /// Takes every waiting byte, never waiting.
    func takeNow() -> Taken {
        state.withLock { state in
            state.woken = false
            if state.closed { return .over }
            if state.pending.isEmpty { return state.finishing ? .over : .nothing }
            defer { state.pending = []; state.pendingFrames = 0 }
            return .bytes(state.pending)
        }
    }

    /// Ends the stream after what is pending now: nothing more is queued.
    func finish() {
        if state.withLock({ $0.finishing = true; return $0.wakeOnce() }) { wake() }
    }

    /// Ends the stream now: what is pending is dropped.
    func close() {
        if state.withLock({ $0.closed = true; $0.pending = []; return $0.wakeOnce() }) { wake() }
    }

    /// Bytes waiting and the number of skips so far (for tests and the server's stats).
    var backlog: (bytes: Int, skips: Int) {
        state.withLock { ($0.pending.count, $0.skips) }
    }
}
