import SkyNetRuntime

extension Connection {
    /// The reader thread's whole life: read and frame until the connection ends, wait for the
    /// flusher, close the descriptor. Returns why it ended.
    func readUntilEnd(_ onEvent: (Event) -> Void) -> CloseReason {
        let reason = readLines(onEvent)
        if case .lineTooLong = reason { drainAfterRefusal() }
        return finishReading(reason)
    }

    /// Reading ended for `reason`: the connection is closing; once the sender (if any) has
    /// left, the descriptor is closed. Returns why the connection ended. The wait is short:
    /// the stream is shut down, so a blocked send fails at once.
    func finishReading(_ ended: CloseReason) -> CloseReason {
        var reason = ended
        reason = state.withLock { state in
            switch state {
            case .open:
                state = .closing(reason, flusher: false)
            case .flushing:
                // The peer is gone or refused: the flusher's blocked send fails after this. A
                // loop that sends is the caller itself (reading ends on the loop): nobody to
                // wait for.
                stream.shutdown()
                state = .closing(reason, flusher: !loopSends.load(ordering: .relaxed))
            case .closing(let local, let flusher):
                // Closed here first: that is the reason, not the shutdown it caused.
                if case .peerClosed = reason { reason = local }
                if case .failed = reason { reason = local }
                if flusher, loopSends.load(ordering: .relaxed) { state = .closing(local, flusher: false) }
            case .notStarted, .closed:
                break
            }
            return reason
        }
        let final = state.wait(while: { if case .closing(_, flusher: true) = $0 { true } else { false } }) { state, _ in
            if case .closing(let reason, _) = state { state = .closed(reason) }
            if case .closed(let reason) = state { return reason }
            return reason
        }
        // `closed`: nobody touches the stream any more.
        stream.close()
        return final
    }

    private func readLines(_ onEvent: (Event) -> Void) -> CloseReason {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        var framing = InboundFraming(maxLineBytes: limits.maxLineBytes)
        while true {
            guard waitForRepliesToDrain() else { return .peerClosed }
            let count: Int
            do { count = try stream.receive(into: chunk) } catch { return .failed(error) }
            if count == 0 { return .peerClosed }
            receivedBytes.add(UInt64(count), ordering: .relaxed)
            var start = 0
            let rejection = framing.split(UnsafeRawBufferPointer(rebasing: chunk[..<count]), from: &start, given: takeOpener) { event in
                onEvent(event)
                return true
            }
            if let rejection { return .unauthenticated(rejection) }
            if framing.isBroken { return .lineTooLong }
        }
    }

    /// Stops reading for `duration`, or until the connection ends, then runs `then` with
    /// whether it is still open, before any later line is handed out. Call it only from the
    /// event handler, as its last step: the hold stops this connection alone, and what the
    /// peer sends meanwhile waits (in the kernel, or read and kept), in order.
    package func holdReading(for duration: Duration, then: @escaping @Sendable (Bool) -> Void) {
        if let reading = loopReading.withLock({ $0 }), reading.loop.isCurrent {
            return reading.askHold(for: duration, then: then)
        }
        then(holdReaderThread(for: duration))
    }

    /// `holdReading` on a reader thread: it waits, blocked.
    private func holdReaderThread(for duration: Duration) -> Bool {
        state.wait(while: { if case .open = $0 { true } else if case .flushing = $0 { true } else { false } },
                   deadline: ContinuousClock.now + duration) { state, _ in
            if case .open = state { return true }
            if case .flushing = state { return true }
            return false
        }
    }

    /// Back pressure: while more than `pauseReadingAbove` bytes wait for a peer that does not
    /// read them, read nothing more from it (its requests would only queue more replies);
    /// read again once the queue is down to a quarter, or the connection ends. Returns false
    /// when the stream's input hung up meanwhile (`InputHangUpReporting`): a peer that closed
    /// its end will read no reply either, and what it sent before is never read now, so the
    /// end of its input would otherwise never be seen (a pipe's last writer closing is not a
    /// wake-up this wait can get, so it looks every `hangUpCheck`).
    private func waitForRepliesToDrain() -> Bool {
        guard let high = limits.pauseReadingAbove else { return true }
        let queued = { (state: State) -> Int in if case .flushing(let queue) = state { queue.count } else { 0 } }
        guard queued(state.withLock { $0 }) > high else { return true }
        guard let input = stream as? any InputHangUpReporting else {
            state.wait(while: { queued($0) > high / 4 }) { _, _ in }
            return true
        }
        while true {
            let paused = state.wait(while: { queued($0) > high / 4 }, deadline: ContinuousClock.now + Self.hangUpCheck) { _, timedOut in timedOut }
            if !paused { return true }
            if input.inputHasHungUp() { return false }
        }
    }

    /// How often a paused reader looks whether its input hung up: well within the second in
    /// which `skynet node --stdio` promises to be gone after its stdin closed.
    static let hangUpCheck = Duration.milliseconds(200)

    /// After refusing an over-long line: let the refusal go out (up to a second), stop
    /// sending, and read (and drop) what the peer is still sending for a moment, so that
    /// closing does not reset the connection before the peer has read our reply. Bounded:
    /// 16 MiB and one second in all.
    private func drainAfterRefusal() {
        let deadline = ContinuousClock.now + .seconds(1)
        state.wait(while: { if case .flushing = $0 { true } else { false } }, deadline: deadline) { _, _ in }
        stream.shutdown(reading: false, writing: true)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        var drained = 0
        while drained < 16 << 20 {
            let left = deadline - ContinuousClock.now
            guard left > .milliseconds(1) else { return }
            stream.setReceiveTimeout(left)
            guard let count = try? stream.receive(into: chunk), count > 0 else { return }
            drained += count
        }
    }
}
