/// Splits a byte stream into lines: pure framing, no I/O, so tests can drive it directly. The
/// one line splitter of SkyNet: connections, journals, inputs files, child output and HTTP heads
/// all frame with it, each choosing what an over-long line means to it.
///
/// Feed it chunks as they arrive, in any sizes; it hands out every complete line (without its
/// newline) in order, and holds at most `maxLineBytes` bytes of a line whose newline has not
/// arrived. A line longer than `maxLineBytes` (newline excluded) is dealt with by `overLong`.
package struct LineFramer: Sendable {
    /// What an over-long line does to the stream.
    package enum OverLongLine: Sendable {
        /// Reported once, as soon as it is known to be too long; after that nothing is framed.
        case fail
        /// Reported once at its end (its newline, or `finish`) and dropped; framing goes on.
        case skip
        /// Handed out cut to its first `maxLineBytes` bytes at its end; the rest is dropped.
        case truncate
    }

    /// A line as `split` hands it out: its bytes are valid only during the call.
    package enum Piece {
        case line(UnsafeRawBufferPointer)
        case tooLong
    }

    /// A line as `feed` hands it out, copied.
    package enum Output: Sendable, Equatable {
        case line(Data)
        case tooLong
    }

    package let maxLineBytes: Int
    package let overLong: OverLongLine
    /// The start of a line whose newline has not arrived yet.
    private var partial: [UInt8] = []
    /// The current line has passed the limit (`skip`, `truncate`): drop the rest of it.
    private var dropping = false
    /// A line was too long under `fail`: the stream cannot be framed any further.
    package private(set) var isBroken = false

    package init(maxLineBytes: Int, overLong: OverLongLine = .fail) {
        self.maxLineBytes = max(0, maxLineBytes)
        self.overLong = overLong
    }

    /// Bytes held of a line not yet complete.
    package var pendingCount: Int { partial.count }

    /// Frames `chunk` from `start`, calling `body` with each piece in order, until the chunk is
    /// used up or `body` returns false. `start` is moved past each line's newline before `body`
    /// sees the line, so a caller that stops can go on from `start` with the same chunk.
    package mutating func split(_ chunk: UnsafeRawBufferPointer, from start: inout Int, _ body: (Piece) -> Bool) {
        guard !isBroken, let base = chunk.baseAddress else { start = chunk.count; return }
        while start < chunk.count {
            guard let found = memchr(base + start, 10, chunk.count - start) else {
                hold(UnsafeRawBufferPointer(rebasing: chunk[start...]), body)
                start = chunk.count
                return
            }
            let end = base.distance(to: UnsafeRawPointer(found))
            let piece = UnsafeRawBufferPointer(rebasing: chunk[start..<end])
            start = end + 1
            guard endLine(with: piece, body), !isBroken else { return }
        }
    }

    /// `split` of a whole chunk, calling `body` with every piece.
    package mutating func split(_ chunk: UnsafeRawBufferPointer, _ body: (Piece) -> Void) {
        var start = 0
        split(chunk, from: &start) { body($0); return true }
    }

    /// The end of the stream: a last line without a newline is handed out like any other
    /// (unless the stream broke); an empty one is not.
    package mutating func finish(_ body: (Piece) -> Void) {
        defer { partial = []; dropping = false }
        if dropping, overLong == .skip { return body(.tooLong) }
        if !isBroken, !partial.isEmpty { partial.withUnsafeBytes { body(.line($0)) } }
    }

    /// `split` with each line copied, calling `emit` in order.
    package mutating func feed(_ chunk: UnsafeRawBufferPointer, emit: (Output) -> Void) {
        split(chunk) { piece in
            switch piece {
            case .line(let bytes): emit(.line(Data(bytes)))
            case .tooLong: emit(.tooLong)
            }
        }
    }

    /// `feed` for an array: the lines and whether the stream broke, for tests and small callers.
    package mutating func feed(_ bytes: [UInt8]) -> [Output] {
        var outputs: [Output] = []
        bytes.withUnsafeBytes { feed($0) { outputs.append($0) } }
        return outputs
    }

    /// Ends the current line with `piece`, its last bytes; returns what `body` returned.
    private mutating func endLine(with piece: UnsafeRawBufferPointer, _ body: (Piece) -> Bool) -> Bool {
        if dropping {
            dropping = false
            if overLong == .skip { return body(.tooLong) }
            return handOut(body)
        }
        let room = maxLineBytes - partial.count
        if piece.count > room {
            switch overLong {
            case .fail: return breakStream(body)
            case .skip: partial = []; return body(.tooLong)
            case .truncate: break
            }
        }
        let kept = UnsafeRawBufferPointer(rebasing: piece.prefix(room))
        if partial.isEmpty { return body(.line(kept)) }
        partial.append(contentsOf: kept)
        return handOut(body)
    }

    /// Keeps the unfinished rest of a chunk, as far as the policy allows.
    private mutating func hold(_ rest: UnsafeRawBufferPointer, _ body: (Piece) -> Bool) {
        guard !dropping else { return }
        let room = maxLineBytes - partial.count
        // Checked before copying, so a line that never ends costs at most the limit.
        guard rest.count > room else { return partial.append(contentsOf: rest) }
        switch overLong {
        case .fail: _ = breakStream(body)
        case .skip: partial = []; dropping = true
        case .truncate: partial.append(contentsOf: rest.prefix(room)); dropping = true
        }
    }

    /// Hands out the held line and lets it go.
    private mutating func handOut(_ body: (Piece) -> Bool) -> Bool {
        defer { partial = [] }
        return partial.withUnsafeBytes { body(.line($0)) }
    }

    private mutating func breakStream(_ body: (Piece) -> Bool) -> Bool {
        isBroken = true
        partial = []
        return body(.tooLong)
    }
}
