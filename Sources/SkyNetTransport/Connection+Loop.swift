import SkyNetRuntime
import Synchronization

/// A connection's reading on an event loop (`EventLoop.shared`) instead of a thread of its own:
/// what the reader thread does (`Connection+Reader.swift`), as steps the loop runs when the
/// socket, or the input pipe of a pair, is readable. The same contract: lines in order,
/// `onEvent` and then `onClose` one call at a time (on the loop's thread), back pressure that
/// stops reading while replies queue up (`pauseReadingAbove`), holds (`holdReading`), and a
/// moment of draining after an over-long line.
///
/// The loop also sends, once the kernel takes no more at once (`Connection.handOverSending`):
/// a socket's one descriptor is watched both ways; a pair's output has a watch of its own,
/// waited on only while bytes wait. Only a pair whose output the loop cannot watch (a regular
/// file) has its writes that wait go to a flusher thread. A pipe's end of input is the end (no
/// half-close), and a pair's reading that is paused or held stays watched for a hang-up alone,
/// so that a peer that closed its end ends the connection then.
///
/// Unchecked: every `var` is touched only on the loop's thread (the watch's handler and the
/// jobs given to `loop.execute`, which the loop runs one at a time).
final class LoopReading: @unchecked Sendable {  // safe without a lock: only the loop's one thread touches it
    /// Strong until the end (`end` lets the connection forget this), as a reader thread holds it.
    private let connection: Connection
    private let stream: LoopStream
    let loop: EventLoop
    private let onEvent: @Sendable (Connection.Event) -> Void
    private let onClose: @Sendable (Connection.CloseReason) -> Void
    private var watch: EventLoop.Watch?
    /// A pair's output, while the loop sends to it (made at the first send that waits).
    private var writeWatch: EventLoop.Watch?
    /// What `watch` and `writeWatch` wait for now: `updateInterest` changes a watch only when
    /// its interest changes (a loop's send would otherwise cost an `epoll_ctl` each time).
    private var interest: Interest = .readable, writeInterest: Interest = .writable
    private var framing: InboundFraming
    /// What was read past the last line handed out, when a handler asked for a hold or the
    /// turn's lines ran out: framed before anything more is read.
    private var leftover: [UInt8] = []
    /// Asked by a handler (`holdReading`) while it ran: how long, and what runs after.
    private var holdAsked: (Duration, @Sendable (Bool) -> Void)?
    private var isHeld = false
    /// The hold under way: its timer, and what runs after it (with false, at once, when the
    /// connection ends first).
    private var heldThen: (TimerTicket, @Sendable (Bool) -> Void)?
    /// Stopped while more than `pauseReadingAbove` bytes wait for the peer; the senders
    /// start it again (`Connection.readingMayGoOn`).
    private var isPausedForReplies = false
    /// After an over-long line: until when what the peer still sends is read and dropped,
    /// how much was, and whether our side stopped sending.
    private var refusal: (until: ContinuousClock.Instant, dropped: Int, writingShut: Bool)?
    /// The loop sends the connection's queue (`Connection.handOverSending`), as the socket
    /// becomes writable.
    private var isSending = false
    /// Lines handed out in this turn of the loop. At `linesPerTurn` the rest of the chunk waits
    /// for the loop's next turn (`isYielding`, in `leftover`): a busy connection does not keep
    /// the loop's other connections waiting.
    private var linesThisTurn = 0
    private var isYielding = false
    /// 16: with 4 clients flooding a node with pings, another client's ping took 0.6 ms at 16,
    /// 0.35 ms at 8 and 200 ms at 64 (the loop's turns grow with what each connection does).
    static let linesPerTurn = 16
    /// The peer closed its end; the replies queued for it are leaving.
    private var peerEnded = false
    private var ended = false

    /// Whether the loop sends the connection's queue too, not a flusher thread: a socket, or a
    /// pair whose output the loop can watch (`pairOutput`), once reading has started (a send
    /// before that, or after a start that failed, goes to a flusher thread).
    var sendsOnLoop: Bool { canSendOnLoop && started.load(ordering: .acquiring) }
    private let canSendOnLoop: Bool
    private let started = Atomic<Bool>(false)
    /// A pair's output descriptor, watched apart from its input.
    private let pairOutput: Int32?

    init(connection: Connection, stream: LoopStream, loop: EventLoop,
         onEvent: @escaping @Sendable (Connection.Event) -> Void, onClose: @escaping @Sendable (Connection.CloseReason) -> Void) {
        self.connection = connection
        self.stream = stream
        self.loop = loop
        self.onEvent = onEvent
        self.onClose = onClose
        framing = InboundFraming(maxLineBytes: connection.limits.maxLineBytes)
        // One number both ways (a socket as stdin and stdout) cannot be watched twice.
        if case .pair(let pair) = stream, pair.writing != pair.reading, loop.canWatch(pair.writing) {
            pairOutput = pair.writing
        } else {
            pairOutput = nil
        }
        canSendOnLoop = stream.isSocket || pairOutput != nil
    }

    /// Starts watching; false when the loop cannot watch the descriptor (no more descriptors,
    /// or a regular file, which epoll refuses): the caller reads on a thread instead.
    func start() -> Bool {
        do {
            let watch = try loop.watch(stream.readDescriptor, for: .readable) { [self] readiness in
                // A pair's input that hung up while nothing is read from it: the peer is gone
                // (told again and again until the end, level-triggered).
                if readiness.hungUp, !stream.isSocket, isHeld || isPausedForReplies { return end(.peerClosed) }
                if readiness.writable, isSending { sendMore() }
                if readiness.readable { readable() }
            }
            started.store(true, ordering: .releasing)
            // Set on the loop's thread; until then `readable` waits for this job, which reads.
            loop.execute { [self] in
                self.watch = watch
                readable()
            }
            return true
        } catch {
            return false
        }
    }

    /// The socket is readable (or the connection is ending: `Connection.closeLocked` calls
    /// this on the loop too, since a paused or held reading is not watched).
    func readable() {
        guard !ended else { return }
        guard watch != nil else { return }  // the start job reads once it has set the watch
        let buffer = loop.scratch.bytes
        var reads = 0
        linesThisTurn = 0
        while !ended {
            // Ending: read what is left, to the end the shutdown makes, even when paused (a
            // paused reading is not watched, so nothing else would come to finish it). Lines
            // held back are dropped then: they must not come after newer ones.
            if connection.isEnding {
                if isHeld || isYielding { return end(.closedLocally) }
                // A pair's shutdown makes no end to read (only a socket's does): end now, as
                // its reader thread does once the shutdown wakes it.
                if !stream.isSocket { return end(.peerClosed) }
            } else if isHeld || isPausedForReplies || peerEnded || isYielding || reads == 4 {
                return  // a few reads at most, then the loop's other descriptors get their turn
            }
            reads += 1
            let count: Int
            do {
                guard let read = try stream.receiveNow(into: buffer) else { return }
                count = read
            } catch {
                return end(.failed(error))
            }
            if count == 0 {
                guard refusal == nil else { return end(.lineTooLong) }
                return endOnceJobsRan(turns: Self.turnsForJobsAtEnd)
            }
            connection.receivedBytes.add(UInt64(count), ordering: .relaxed)
            if refusal != nil {
                guard drop(count) else { return }
                continue
            }
            frame(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            // Less than the buffer: the kernel had no more. Asking again would only be told so
            // (a system call for each readable turn); more that comes is told by the watch,
            // which is level-triggered. Not when ending: a paused reading is not watched for reading.
            if count < buffer.count, !connection.isEnding { return }
        }
    }

    /// Frames `chunk`, handing each line to the handler, until it ends or a handler asks for a
    /// hold (the rest is kept for after it).
    private func frame(_ chunk: UnsafeRawBufferPointer) {
        var start = 0
        let rejection = framing.split(chunk, from: &start, given: connection.takeOpener) { event in
            onEvent(event)
            linesThisTurn += 1
            return holdAsked == nil && linesThisTurn < Self.linesPerTurn
        }
        if let rejection { return end(.unauthenticated(rejection)) }
        if framing.isBroken { return refuse() }
        if let (duration, then) = holdAsked {
            holdAsked = nil
            leftover = Array(UnsafeRawBufferPointer(rebasing: chunk[start...]))
            hold(for: duration, then: then)
            return
        }
        if start < chunk.count {
            // This turn's lines are handed out: the rest waits for the loop's next turn.
            leftover = Array(UnsafeRawBufferPointer(rebasing: chunk[start...]))
            isYielding = true
            loop.executeNextTurn { [self] in goOnAfterYield() }
        }
        if connection.pauseReadingIfReplying() {
            isPausedForReplies = true
            updateInterest()
        }
    }

    /// The loop's next turn after `frame` yielded: the rest of the chunk, then more reading.
    private func goOnAfterYield() {
        guard !ended, isYielding else { return }
        isYielding = false
        linesThisTurn = 0
        let rest = leftover
        leftover = []
        rest.withUnsafeBytes { frame($0) }
        if !ended, !isYielding, !isHeld { readable() }
    }

    /// A handler asks, on the loop's thread, for reading to stop for `duration`; `then` runs
    /// after it (with whether the connection is still open), before anything more is framed.
    func askHold(for duration: Duration, then: @escaping @Sendable (Bool) -> Void) {
        holdAsked = (duration, then)
    }

    private func hold(for duration: Duration, then: @escaping @Sendable (Bool) -> Void) {
        isHeld = true
        updateInterest()
        let ticket = DeadlineTimer.shared.schedule(at: .now + duration) { [self] in
            loop.execute { [self] in
                guard !ended, let (_, then) = heldThen else { return }
                heldThen = nil
                isHeld = false
                then(!connection.isEnding)
                guard !ended else { return }
                // Held again from the continuation: before any later line.
                if let (duration, then) = holdAsked {
                    holdAsked = nil
                    return hold(for: duration, then: then)
                }
                let rest = leftover
                leftover = []
                rest.withUnsafeBytes { frame($0) }
                guard !ended else { return }
                updateInterest()
            }
        }
        heldThen = (ticket, then)
    }

    /// The senders' queue went down (or the connection is ending): read again.
    func goOn() {
        guard isPausedForReplies, !ended else { return readable() }
        isPausedForReplies = false
        updateInterest()
        readable()
    }

    /// The connection's sender handed the queue to the loop.
    func startSending() {
        guard !ended else { return }
        isSending = true
        sendMore()
    }

    private func sendMore() {
        // The loop may have sent the queue already (a close on the loop flushes it) and another
        // sender taken over since: then a job or a writable socket is not the sender's any more.
        guard connection.loopSends.load(ordering: .relaxed) else {
            isSending = false
            if !ended { updateInterest() }
            return
        }
        if let pairOutput, writeWatch == nil, !ended {
            do {
                writeWatch = try loop.watch(pairOutput, for: .writable) { [self] _ in
                    if isSending { sendMore() }
                }
            } catch {
                // The probe at the start said it could: only out of memory or watches now.
                connection.close(because: .failed(SocketError("epoll_ctl", code: error.code)))
                return
            }
        }
        if connection.flush(waiting: false) { isSending = false }
        if !ended { updateInterest() }
    }

    /// Waits on the descriptor for what the reading and the sending need now: on a socket,
    /// nothing while a reading that is held or paused has nothing to send (a hang-up would be
    /// told again and again, level-triggered, with nobody to read it); on a pair's input, its
    /// hang-up alone then (the handler ends the connection at the first).
    private func updateInterest() {
        var wanted: Interest = []
        if !isHeld, !isPausedForReplies, !peerEnded { wanted.insert(.readable) }
        var waiting = true
        if !stream.isSocket {
            let writeWanted: Interest = isSending ? .writable : []
            if let writeWatch, writeWanted != writeInterest {
                waiting = writeWatch.change(to: writeWanted)
                writeInterest = writeWanted
            }
            if wanted.isEmpty { wanted = .hangUp }
        } else if isSending {
            wanted.insert(.writable)
        }
        if let watch, wanted != interest {
            waiting = watch.change(to: wanted) && waiting
            interest = wanted
        }
        // Out of memory or of the kernel's watches: nothing more would be told, so end it.
        if !waiting { connection.close(because: .failed(SocketError("epoll_ctl"))) }
    }

    /// After an over-long line was refused: for up to a second (and 16 MiB), read and drop
    /// what the peer still sends, and stop sending once the refusal has left, so that closing
    /// does not reset the connection before the peer has read it.
    private func refuse() {
        refusal = (.now + .seconds(1), 0, false)
        _ = DeadlineTimer.shared.schedule(at: .now + .seconds(1)) { [self] in
            loop.execute { [self] in end(.lineTooLong) }
        }
        shutWritingOnceSent()
        updateInterest()
    }

    /// Stops sending once the refusal has left (nothing queued, nobody sending), looking
    /// again every 10 ms until then: the peer reads our reply before it sees the end.
    private func shutWritingOnceSent() {
        guard !ended, var refusal, !refusal.writingShut else { return }
        guard connection.isIdle else {
            _ = DeadlineTimer.shared.schedule(at: .now + .milliseconds(10)) { [self] in
                loop.execute { [self] in shutWritingOnceSent() }
            }
            return
        }
        stream.shutdown(reading: false, writing: true)
        refusal.writingShut = true
        self.refusal = refusal
    }

    /// The peer closed its end (a half-close, perhaps: it may still read): the replies still
    /// queued for it get until `deadline` to leave (looked at every 10 ms), then the connection
    /// ends. Nothing more is read meanwhile (the end would be told again and again).
    private func endOnceRepliesLeft(until deadline: ContinuousClock.Instant) {
        guard !ended else { return }
        guard !connection.isIdle, !connection.isEnding, ContinuousClock.now < deadline else { return end(.peerClosed) }
        if !peerEnded {
            peerEnded = true
            updateInterest()
        }
        _ = DeadlineTimer.shared.schedule(at: .now + .milliseconds(10)) { [self] in
            loop.execute { [self] in endOnceRepliesLeft(until: deadline) }
        }
    }

    /// At most this many turns of the loop for its jobs to run at the peer's end.
    static let turnsForJobsAtEnd = 16

    /// The peer ended its input: the work its last lines started on this loop (a node's scans
    /// that only wait) answers in the loop's jobs, so the end is decided once the loop has none
    /// left (for at most `turns` more turns), not in the turn that read it. Then a pipe's end is
    /// a hang-up (`--stdio` promises to be gone at once), and a socket's waits for its replies.
    private func endOnceJobsRan(turns: Int) {
        guard !ended else { return }
        if !peerEnded {
            peerEnded = true
            updateInterest()
        }
        if turns > 0, loop.hasJobs {
            return loop.executeNextTurn { [self] in endOnceJobsRan(turns: turns - 1) }
        }
        guard stream.isSocket else { return end(.peerClosed) }
        endOnceRepliesLeft(until: .now + connection.limits.repliesAfterEnd)
    }

    /// Counts `count` bytes dropped; false once the refusal is over.
    private func drop(_ count: Int) -> Bool {
        guard var refusal else { return false }
        refusal.dropped += count
        self.refusal = refusal
        guard refusal.dropped < 16 << 20, ContinuousClock.now < refusal.until else {
            end(.lineTooLong)
            return false
        }
        return true
    }

    private func end(_ reason: Connection.CloseReason) {
        guard !ended else { return }
        // Lines sent on the loop in this turn wait for its end (`Connection.sendLater`): what
        // the kernel takes leaves now, as it would have had they been sent at once.
        if connection.loopSends.load(ordering: .relaxed) { _ = connection.flush(waiting: false) }
        ended = true
        watch?.cancel()  // before the descriptor can be closed and its number reused
        writeWatch?.cancel()
        writeWatch = nil
        if let (ticket, then) = heldThen {
            heldThen = nil
            _ = DeadlineTimer.shared.cancel(ticket)
            then(false)
        }
        connection.loopReading.withLock { $0 = nil }
        let final = connection.finishReading(reason)
        onClose(final)
        connection.closed.fulfil(final)
    }
}

/// What a loop reads: a socket, or the input pipe of a pair.
enum LoopStream {
    case socket(Socket)
    case pair(DescriptorPair)

    /// The stream as a loop reads it; nil for any other.
    init?(_ stream: any ByteStream) {
        if let socket = stream as? Socket {
            self = .socket(socket)
        } else if let pair = stream as? DescriptorPair {
            self = .pair(pair)
        } else {
            return nil
        }
    }

    var isSocket: Bool { if case .socket = self { true } else { false } }

    var readDescriptor: Int32 {
        switch self {
        case .socket(let socket): socket.descriptor
        case .pair(let pair): pair.reading
        }
    }

    /// What has arrived, without waiting: nil when nothing has, 0 at the end.
    func receiveNow(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int? {
        switch self {
        case .socket(let socket): try socket.receiveNow(into: buffer)
        case .pair(let pair): try pair.receiveNow(into: buffer)
        }
    }

    func shutdown(reading: Bool, writing: Bool) {
        switch self {
        case .socket(let socket): socket.shutdown(reading: reading, writing: writing)
        case .pair(let pair): pair.shutdown(reading: reading, writing: writing)
        }
    }
}
