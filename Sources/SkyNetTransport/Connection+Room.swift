import SkyNetRuntime
import Synchronization

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

extension Connection {
    /// Sends `bytes` (as `send` does) only if the queue would then hold fewer than half of
    /// `maxQueuedBytes`, or holds nothing; false, with nothing sent, when it would not. The
    /// other half is left to the lines sent without waiting (pings, cancels), which end the
    /// connection when the queue is full.
    package func sendIfRoom(_ bytes: [UInt8]) throws(Closed) -> Bool {
        try send(bytes, ifRoomBelow: roomMark, unless: nil) == .sent
    }

    /// Sends `bytes` once `sendIfRoom` can, suspending meanwhile: a sender that outruns its
    /// peer waits instead of failing the connection. Waiting senders go in turn, first come
    /// first served. Returns false, having sent nothing, once `abandoned` says nobody wants
    /// the line any more (asked under the lock that orders lines, so the line is then never
    /// sent) or the task is cancelled; throws `Closed` once the connection has ended.
    package func sendWhenRoom(_ bytes: [UInt8], unless abandoned: (() -> Bool)? = nil) async throws(Closed) -> Bool {
        var generation = room.enter()
        var woken = false
        defer {
            room.leave()
            // The turn passes on, whatever this sender did with it.
            if woken { room.changed() }
        }
        while !Task.isCancelled {
            switch try send(bytes, ifRoomBelow: roomMark, unless: abandoned) {
            case .sent: return true
            case .abandoned: return false
            case .noRoom: break
            }
            generation = await room.wait(after: generation, first: woken)
            woken = true
        }
        return false
    }

    /// Where senders that wait for room stop filling the queue.
    private var roomMark: Int { limits.maxQueuedBytes / 2 }
}

/// The senders waiting for room in a connection's queue, in turn. Each change (the queue shrank)
/// wakes the first; when it is done (sent, gave up, or found too little room and is first
/// again) it passes the turn on. The end of the connection wakes them all. A waiter notes the
/// generation before it looks for room and sleeps only while no change came after that, so
/// no wake-up falls between its look and its sleep.
///
/// `changed` is called after every send: it costs one atomic load while nobody waits. That is
/// safe because a waiter counts itself (`enter`) before it looks at the queue, under the
/// connection's state lock that the sender held when it shrank the queue: either the waiter
/// saw the shrunk queue, or the sender sees the count.
final class RoomSignal: Sendable {
    private struct Sleepers {
        var generation: UInt64 = 0
        var lastID: UInt64 = 0
        /// First come, first served; a waiter that was woken and found too little room goes
        /// back to the front.
        var queue: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let waiting = Atomic<Int>(0)
    private let sleepers = Locked(Sleepers())

    /// Counts a waiter in; returns the generation to wait after.
    func enter() -> UInt64 {
        waiting.add(1, ordering: .sequentiallyConsistent)
        return sleepers.withLock { $0.generation }
    }

    func leave() {
        waiting.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Suspends until this waiter's turn after a change past `generation` (at once if one
    /// came already), or until the task is cancelled; returns the generation now.
    func wait(after generation: UInt64, first: Bool) async -> UInt64 {
        let id = sleepers.withLock { sleepers in
            sleepers.lastID += 1
            return sleepers.lastID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let goOn = sleepers.withLock { sleepers -> Bool in
                    guard sleepers.generation == generation, !Task.isCancelled else { return true }
                    if first {
                        sleepers.queue.insert((id, continuation), at: 0)
                    } else {
                        sleepers.queue.append((id, continuation))
                    }
                    return false
                }
                if goOn { continuation.resume() }
            }
        } onCancel: {
            let continuation = sleepers.withLock { sleepers in
                sleepers.queue.firstIndex { $0.id == id }.map { sleepers.queue.remove(at: $0).continuation }
            }
            continuation?.resume()
        }
        return sleepers.withLock { $0.generation }
    }

    /// How many sleep.
    var sleeping: Int { sleepers.withLock { $0.queue.count } }

    /// The queue shrank: the first sleeper looks again.
    func changed() {
        guard waiting.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let first = sleepers.withLock { sleepers in
            sleepers.generation &+= 1
            return sleepers.queue.isEmpty ? nil : sleepers.queue.removeFirst().continuation
        }
        first?.resume()
    }

    /// The connection ended: every sleeper looks again (and finds it closed).
    func ended() {
        let all = sleepers.withLock { sleepers in
            sleepers.generation &+= 1
            defer { sleepers.queue = [] }
            return sleepers.queue.map(\.continuation)
        }
        for continuation in all { continuation.resume() }
    }
}
