import SkyNetRuntime
import Synchronization

/// A connection that carries lines of bytes over a `ByteStream`: a TCP socket, or a pair of
/// pipes (to a child process, or this process's own stdin and stdout), the same way.
///
/// A socket, or a pair's input pipe, is read on one of the process's event loops
/// (`LoopReading`); what a loop cannot watch (a regular file as input) by a reader thread of
/// its own, with blocking reads. Either frames what it reads with a `LineFramer` and hands
/// each line to a handler. Writes never block the caller: the caller that finds nobody sending
/// sends (without waiting), also what others queue meanwhile, except on the loop that reads
/// the connection, which sends a turn's lines together at its end (`sendLater`); what the
/// kernel does not take at once is queued, up to a bound, and sent by the loop when the socket
/// (or a pair's output) is writable (by a short-lived flusher thread for an output the loop
/// cannot watch); a peer that lets too much
/// queue up fails the connection, unless the sender waits for room (`sendWhenRoom`). With
/// `Limits.pauseReadingAbove` set, reading stops while the queue is above that mark (back
/// pressure).
///
/// All of it is one `State`, changed only under one lock: there is no moment in which a
/// `send` can queue bytes that no sender will send.
package final class Connection: Sendable {
    package struct Limits: Sendable {
        /// The longest line accepted, newline excluded (PROTOCOL.md: 1 MiB).
        package var maxLineBytes = 1 << 20
        /// The most bytes queued for a peer that does not read: beyond, the connection fails.
        package var maxQueuedBytes = 8 << 20
        /// When set, the reader stops reading while more than this many bytes are queued, and
        /// reads again once fewer than a quarter of it are (or the connection ends).
        package var pauseReadingAbove: Int?
        /// How long replies queued for a socket peer that closed its end (a half-close: it may
        /// still read) may take to leave. A pair of pipes does not wait: its peer's end of input
        /// is a hang-up (`--stdio` promises to be gone within 0.2 s).
        package var repliesAfterEnd = Duration.seconds(1)
        package init() {}
    }

    /// What the reader thread hands to the handler.
    package enum Event: Sendable {
        case line(Data)
        /// A line grew past `maxLineBytes`: the handler may send a last reply; reading stops.
        case lineTooLong
    }

    /// Why a connection ended.
    package enum CloseReason: Sendable, CustomStringConvertible {
        case peerClosed, closedLocally, lineTooLong, writeBacklog
        case failed(SocketError)
        /// The connection's framing refused what it read (on an encrypted link: a frame altered,
        /// replayed, reordered or not from the peer).
        case unauthenticated(any LineRefusal)

        package var description: String {
            switch self {
            case .peerClosed: "closed by peer"
            case .closedLocally: "closed"
            case .lineTooLong: "line too long"
            case .writeBacklog: "peer does not read its replies"
            case .failed(let error): error.description
            case .unauthenticated(let rejection): rejection.description
            }
        }
    }

    /// Sending on a connection that has ended (or not started).
    package struct Closed: Error, CustomStringConvertible {
        package var description: String { "connection closed" }
    }

    /// The one state of a connection. `open` and `flushing` read; `flushing` also has one
    /// sender (a caller of `send`, or a flusher thread) that owns sending the queue. A send
    /// finds either no sender and an empty queue (`open`) or a sender that will see what it
    /// appends (`flushing`): the sender leaves `flushing` only under the lock, when it finds
    /// the queue empty.
    enum State {
        /// Created; `start` not called yet. Sends are refused; `close` closes the descriptor.
        case notStarted
        /// Reading; nothing queued, no sender.
        case open
        /// Reading; a sender sends the queue.
        case flushing(ByteQueue)
        /// Ending: the stream is shut down, the reader will close the descriptor once the
        /// sender (if `flusher`) has left.
        case closing(CloseReason, flusher: Bool)
        /// The descriptor is closed.
        case closed(CloseReason)
    }

    package let stream: any ByteStream
    /// The peer's `host:port` (or name), for logs.
    package let peer: String
    /// Its limits (a handshake names `maxLineBytes` when a peer's line goes past it).
    package let limits: Limits
    let state = Guarded(State.notStarted)
    /// Fulfilled once the connection has ended and its descriptor is closed.
    package let closed = AsyncSignal<CloseReason>()
    /// Once given (`frame`): seals every line sent. Taken before `state`, around the whole
    /// send, so lines go out in the order they were sealed in (a counter nonce's order).
    private let sealing = Locked<(any MessageSealer)?>(nil)
    /// Given by `frame`, until the reader takes it (`takeOpener`) for the bytes after the line
    /// it is handling; `openerGiven` lets the reader look without the lock at every line.
    private let givenOpener = Locked<(any MessageOpener)?>(nil)
    private let openerGiven = Atomic<Bool>(false)
    /// Bytes the stream took and bytes read from it, ever (`progress`): a peer busy with a long
    /// transfer shows it is alive by moving them, even while its pong waits behind chunks.
    let sentBytes = Atomic<UInt64>(0)
    let receivedBytes = Atomic<UInt64>(0)
    /// Reading on an event loop, for a socket (nil on a reader thread, and once it ended).
    let loopReading = Locked<LoopReading?>(nil)
    /// Reading on the loop stopped for replies that queue up (`pauseReadingAbove`). Changed
    /// only under `state`'s lock, with the queue it depends on.
    let readingPaused = Atomic<Bool>(false)
    /// The event loop of `loopReading` sends the queue (`handOverSending`). Changed only under
    /// `state`'s lock.
    let loopSends = Atomic<Bool>(false)
    /// The senders that wait for room in the queue, woken in turn as it shrinks, and all at
    /// once when the connection ends.
    let room = RoomSignal()

    package init(stream: any ByteStream, peer: String, limits: Limits = Limits()) {
        self.stream = stream
        self.peer = peer
        self.limits = limits
        closed.whenFulfilled { [room] _ in room.ended() }
    }

    /// The loop's reading of the connection when the caller runs on that loop's thread.
    private var readingHere: LoopReading? {
        loopReading.withLock { $0 }.flatMap { $0.loop.isCurrent ? $0 : nil }
    }

    /// The event loop that reads the connection, once it has started there.
    package var eventLoop: EventLoop? { loopReading.withLock { $0?.loop } }

    package convenience init(socket: Socket, peer: String, limits: Limits = Limits()) {
        self.init(stream: socket, peer: peer, limits: limits)
    }

    /// Starts reading: a socket or a pair's input pipe on an event loop (`EventLoop.shared`),
    /// else on a reader thread of its own. `onEvent` and then `onClose` run there, one call at a time;
    /// they must not block (on a loop, the other connections of the loop wait meanwhile).
    /// Call once, before any `send`.
    package func start(onEvent: @escaping @Sendable (Event) -> Void, onClose: @escaping @Sendable (CloseReason) -> Void = { _ in }) {
        let closedBeforeStart: CloseReason? = state.withLock { state in
            switch state {
            case .notStarted:
                state = .open
                return nil
            case .closed(let reason), .closing(let reason, _):
                return reason
            case .open, .flushing:
                return nil  // started twice: the first reader serves
            }
        }
        if let closedBeforeStart {
            // Closed before it started: the descriptor is already gone, nothing to read.
            onClose(closedBeforeStart)
            return
        }
        if let readable = LoopStream(stream), let loop = try? EventLoop.shared.next() {
            let reading = LoopReading(connection: self, stream: readable, loop: loop, onEvent: onEvent, onClose: onClose)
            loopReading.withLock { $0 = reading }
            if reading.start() {
                // Closed while it started: the loop must look, since no shutdown it can see
                // may come any more.
                if isEnding { loop.execute { reading.readable() } }
                return
            }
            loopReading.withLock { $0 = nil }
        }
        startThread(named: "skynet-reader") { [self] in
            let reason = readUntilEnd(onEvent)
            onClose(reason)
            closed.fulfil(reason)
        }
    }

    /// Sends bytes (whole lines, newline included) without blocking. Throws `Closed` when the
    /// connection has ended; fails the connection when the peer lets too much queue up.
    /// Once `frame` was called, each line is sealed (one line per call).
    package func send(_ bytes: [UInt8]) throws(Closed) {
        _ = try send(bytes, ifRoomBelow: nil, unless: nil)
    }

    /// Sends `bytes` as `send` does, unless `abandoned` says, under the lock that orders the
    /// lines, that they are no longer wanted: then nothing is sent. A line sent after this
    /// call returned (such as a `cancel` of what was abandoned) leaves after it.
    package func send(_ bytes: [UInt8], unless abandoned: @escaping () -> Bool) throws(Closed) {
        _ = try send(bytes, ifRoomBelow: nil, unless: abandoned)
    }

    /// What `send(_:ifRoomBelow:unless:)` did with a line.
    enum SendOutcome { case sent, noRoom, abandoned }

    /// Sends `bytes` as `send` does when fewer than `mark` bytes would then be queued (or
    /// nothing is queued) and `abandoned` (if given) says the line is still wanted; otherwise
    /// seals and queues nothing. A nil `mark` always sends.
    func send(_ bytes: [UInt8], ifRoomBelow mark: Int?, unless abandoned: (() -> Bool)?) throws(Closed) -> SendOutcome {
        enum Taken { case owned([UInt8]), queued, refused(SendOutcome) }
        // All of it under the sealing lock, and before sealing: no other line can queue
        // between the look and this one's queueing; a line that waits has taken no sequence
        // number that a later line would skip; and a line is abandoned or sent, never both
        // (whoever abandons it, then sends a cancel, sends that after it).
        let taken = try sealing.withLock { (seal) throws(Closed) -> Taken in
            if let abandoned, abandoned() { return .refused(.abandoned) }
            if let mark, !hasRoom(for: bytes.count, below: mark) { return .refused(.noRoom) }
            let owned = try queueOrOwn(seal?.seal(bytes) ?? bytes)
            return owned.map(Taken.owned) ?? .queued
        }
        switch taken {
        case .refused(let outcome): return outcome
        case .queued: return .sent
        case .owned(let owned):
            if owned.count < Self.sendLaterBelow, let reading = readingHere, reading.sendsOnLoop {
                try sendLater(owned, on: reading)
                return .sent
            }
            // Sent outside the sealing lock: lines sealed meanwhile queue behind these bytes.
            try sendAsOwner(owned)
            return .sent
        }
    }

    /// From now on every line sent is sealed with `sending`, and every byte read after the line
    /// being handled is opened by `receiving`, or the connection closes at once. Call it on the
    /// reader (from the event handler) while handling the line that completed a handshake, so
    /// that no later byte escapes it, and before anything else is sent.
    package func frame(sending: some MessageSealer, receiving: some MessageOpener) {
        givenOpener.withLock { $0 = receiving }
        openerGiven.store(true, ordering: .releasing)
        sealing.withLock { $0 = sending }
    }

    /// Whether lines go through a framing of their own (`frame`) on this connection.
    package var isFramed: Bool { sealing.withLock { $0 != nil } }

    /// Lines this long or longer are sent at once even on the loop: a turn's wait is for
    /// gathering small replies, and large ones would only hold the queue's room meanwhile.
    static let sendLaterBelow = 64 * 1024

    /// The most bytes one `send` is given from the queue.
    static let sendAtOnce = 256 * 1024

    /// Whether that framing encrypts: an encrypted link.
    package var isEncrypted: Bool { sealing.withLock { $0?.encrypts ?? false } }

    /// The opener `frame` gave, once: the reader frames with it from then on.
    func takeOpener() -> (any MessageOpener)? {
        guard openerGiven.load(ordering: .acquiring) else { return nil }
        return givenOpener.withLock { opener in
            defer { opener = nil }
            return opener
        }
    }

    /// Whether `count` more bytes leave fewer than `mark` queued (or nothing is queued). An
    /// ended connection has room: the send that follows throws `Closed`.
    private func hasRoom(for count: Int, below mark: Int) -> Bool {
        state.withLock { state in
            guard case .flushing(let queue) = state else { return true }
            return queue.isEmpty || queue.count + count < mark
        }
    }

    /// Queues `bytes` behind whatever is being sent, or, when nothing is, makes the caller
    /// the sender (`flushing` with an empty queue) and returns the bytes for it to send.
    private func queueOrOwn(_ bytes: [UInt8]) throws(Closed) -> [UInt8]? {
        try state.withLock { (state) throws(Closed) -> [UInt8]? in
            switch state {
            case .notStarted, .closing, .closed:
                throw Closed()
            case .open:
                state = .flushing(ByteQueue())
                return bytes
            case .flushing(var queue):
                guard queue.count + bytes.count <= limits.maxQueuedBytes else {
                    closeLocked(&state, reason: .writeBacklog)
                    throw Closed()
                }
                state = .open  // drop the state's reference so the queue grows in place
                queue.append(bytes)
                state = .flushing(queue)
                return nil
            }
        }
    }

    /// The caller owns sending: it sends its bytes and then whatever other callers queued
    /// meanwhile, each time all of it in one `send` that never waits (so lines sent from
    /// several threads at once leave in fewer system calls, and nobody waits on the lock
    /// through a system call). When the kernel takes no more, what is left goes to a
    /// flusher thread. Throws `Closed` only when the caller's own bytes could not be sent.
    ///
    /// Queued bytes stay in the queue while they are sent (their front is sent, shared with the
    /// queue, not copied, and what the kernel took is consumed after), so that the room others
    /// look for counts them.
    private func sendAsOwner(_ first: [UInt8]) throws(Closed) {
        var pending = first[...], pendingIsQueued = false, rounds = 0
        while true {
            var sent = 0
            do throws(SocketError) {
                sent = try stream.send(pending, wait: false)
            } catch {
                state.withLock { state in
                    closeLocked(&state, reason: .failed(error))
                    leaveSending(&state)
                }
                room.changed()
                if !pendingIsQueued { throw Closed() }
                return
            }
            rounds += 1
            sentBytes.add(UInt64(sent), ordering: .relaxed)
            let (next, resume) = state.withLock { state -> (Next, Bool) in
                let next = nextStep(&state, sent: sent, of: pending, queued: pendingIsQueued, rounds: rounds)
                return (next, readingMayGoOn(state))
            }
            if sent > 0 { room.changed() }
            if resume { resumeReading() }
            switch next {
            case .send(let bytes):
                pending = bytes
                pendingIsQueued = true
            case .done: return
            case .handOver(let reading):
                handOverSending(to: reading)
                return
            }
        }
    }

    /// On the loop that reads the connection (a handler, or a task that prefers the loop), the
    /// owner puts its bytes first in the queue (lines others sealed since wait behind them) and
    /// the loop sends them after what it runs now: the replies of one turn leave in one system
    /// call rather than one each.
    private func sendLater(_ bytes: [UInt8], on reading: LoopReading) throws(Closed) {
        try state.withLock { (state) throws(Closed) in
            guard case .flushing(let others) = state else {
                leaveSending(&state)  // closed since it became the owner
                throw Closed()
            }
            var queue = ByteQueue(bytes[...])
            queue.append(contentsOf: others)
            state = .flushing(queue)
            loopSends.store(true, ordering: .relaxed)
        }
        handOverSending(to: reading)
    }

    private enum Next { case send(ArraySlice<UInt8>), done, handOver(LoopReading?) }

    /// The owner sent `sent` bytes of `pending` (the queue's front when `queued`, else its own
    /// bytes): what it does next, with the state changed to match.
    private func nextStep(_ state: inout State, sent: Int, of pending: ArraySlice<UInt8>, queued pendingIsQueued: Bool, rounds: Int) -> Next {
        guard case .flushing(var queue) = state else {
            if case .closing = state { leaveSending(&state) }
            return .done  // `open`, `notStarted`, `closed`: not reached, only the sender leaves `flushing`
        }
        state = .open  // drop the state's reference so the queue changes in place
        if pendingIsQueued { queue.consume(sent) }
        let ownLeft = pendingIsQueued ? 0 : pending.count - sent
        if ownLeft == 0, queue.isEmpty {
            return .done  // `open`, in the same step that saw it empty: no send falls between
        }
        if sent < pending.count || rounds >= 16 {
            // The kernel is full (or others keep queueing): the loop, or a thread of its own,
            // sends the rest. The loop is the sender from this step on (`finishReading`, on
            // the loop, must not wait for it).
            if ownLeft > 0 {
                var rest = ByteQueue(pending.dropFirst(sent))
                rest.append(contentsOf: queue)
                queue = rest
            }
            state = .flushing(queue)
            let reading = loopReading.withLock { $0 }.flatMap { $0.sendsOnLoop ? $0 : nil }
            loopSends.store(reading != nil, ordering: .relaxed)
            return .handOver(reading)
        }
        state = .flushing(queue)
        return .send(queue.front(Self.sendAtOnce))
    }

    /// The sender is leaving a connection that is closing: the reader may close the descriptor.
    private func leaveSending(_ state: inout State) {
        if case .closing(let reason, flusher: true) = state { state = .closing(reason, flusher: false) }
    }

    /// Ends the connection: the reader wakes, and the descriptor is closed once it is done.
    /// `reason` is what `closed` tells (a sender that gave up waiting for room says
    /// `writeBacklog`).
    package func close(because reason: CloseReason = .closedLocally) {
        // Lines sent on the loop wait for the end of its turn (`sendLater`): a refusal sent
        // just before the close leaves first, as one sent at once would have.
        if loopSends.load(ordering: .relaxed), readingHere != nil { _ = flush(waiting: false) }
        let closedNow = state.withLock { state -> Bool in
            if case .notStarted = state {
                // No reader will ever close the descriptor: do it here.
                stream.close()
                state = .closed(reason)
                return true
            }
            closeLocked(&state, reason: reason)
            return false
        }
        if closedNow { closed.fulfil(reason) }
    }

    /// Why the connection ended, once it is ending; nil while it runs.
    package var closeReason: CloseReason? {
        state.withLock { state in
            switch state {
            case .closing(let reason, _), .closed(let reason): reason
            case .notStarted, .open, .flushing: nil
            }
        }
    }

    /// Bytes waiting to be sent.
    package var queuedBytes: Int {
        state.withLock { if case .flushing(let queue) = $0 { queue.count } else { 0 } }
    }

    /// Moves a running connection to `closing` and wakes its reader (and flusher).
    func closeLocked(_ state: inout State, reason: CloseReason) {
        switch state {
        case .open:
            state = .closing(reason, flusher: false)
        case .flushing:
            state = .closing(reason, flusher: true)
        case .notStarted, .closing, .closed:
            return
        }
        stream.shutdown()
        // A loop's reading that is paused or held is not watched: the shutdown would not wake it.
        if let reading = loopReading.withLock({ $0 }) { reading.loop.execute { reading.readable() } }
    }

    /// Whether the connection is open with nothing queued and nobody sending.
    var isIdle: Bool {
        state.withLock { if case .open = $0 { true } else { false } }
    }

    /// Whether the connection is ending or has ended (or has not started).
    var isEnding: Bool {
        state.withLock { state in
            switch state {
            case .open, .flushing: false
            case .notStarted, .closing, .closed: true
            }
        }
    }

    /// For a loop's reading: stops it (true) while more than `pauseReadingAbove` bytes wait.
    func pauseReadingIfReplying() -> Bool {
        guard let high = limits.pauseReadingAbove else { return false }
        return state.withLock { state in
            guard case .flushing(let queue) = state, queue.count > high else { return false }
            readingPaused.store(true, ordering: .relaxed)
            return true
        }
    }

    /// Under the state's lock, after the queue shrank: whether a loop's reading paused for
    /// replies may go on (the queue is down to a quarter of the mark, or empty); it is marked
    /// going on, and the caller calls `resumeReading` once out of the lock.
    private func readingMayGoOn(_ state: State) -> Bool {
        guard readingPaused.load(ordering: .relaxed), let high = limits.pauseReadingAbove else { return false }
        if case .flushing(let queue) = state, queue.count > high / 4 { return false }
        readingPaused.store(false, ordering: .relaxed)
        return true
    }

    private func resumeReading() {
        if let reading = loopReading.withLock({ $0 }) { reading.loop.execute { reading.goOn() } }
    }

    /// What the owner of sending does when the kernel takes no more: a socket read on an event
    /// loop gives the queue to the loop, which sends more each time the socket is writable;
    /// otherwise a flusher thread of its own sends it, blocking.
    private func handOverSending(to reading: LoopReading?) {
        if let reading {
            reading.loop.execute { reading.startSending() }
        } else {
            startThread(named: "skynet-flusher") { [self] in _ = flush(waiting: true) }
        }
    }

    /// Sends the queue until it is empty or the connection ends (true): blocking its own thread
    /// (`waiting`), or, on an event loop, only what the kernel takes now (false when it takes
    /// no more: the loop calls again once the socket is writable).
    func flush(waiting: Bool) -> Bool {
        while true {
            var resume = false
            let pending: ArraySlice<UInt8>? = state.withLock { state in
                switch state {
                case .flushing(let queue) where queue.isEmpty:
                    state = .open  // in the same step that saw it empty: no send falls between
                    loopSends.store(false, ordering: .relaxed)
                    resume = readingMayGoOn(state)
                    return nil
                case .flushing(let queue):
                    return queue.front(Self.sendAtOnce)
                case .closing(let reason, flusher: true):
                    state = .closing(reason, flusher: false)  // the reader may close the descriptor
                    loopSends.store(false, ordering: .relaxed)
                    return nil
                case .notStarted, .open, .closing, .closed:
                    return nil  // not reached: only the flusher leaves `flushing`
                }
            }
            if resume { resumeReading() }
            guard let pending else {
                room.changed()
                return true
            }
            do {
                let sent = try stream.send(pending, wait: waiting)
                sentBytes.add(UInt64(sent), ordering: .relaxed)
                let resume = state.withLock { state -> Bool in
                    guard case .flushing(var queue) = state else { return false }
                    state = .open  // drop the state's reference so the queue shrinks in place
                    queue.consume(sent)
                    state = .flushing(queue)
                    return readingMayGoOn(state)
                }
                if resume { resumeReading() }
                room.changed()
                if !waiting, sent < pending.count { return false }
            } catch {
                state.withLock { closeLocked(&$0, reason: .failed(error)) }
                room.changed()
            }
        }
    }
}
