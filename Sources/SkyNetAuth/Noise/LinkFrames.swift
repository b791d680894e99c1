import SkyNetRuntime

/// The frames of an encrypted link (docs/PROTOCOL.md, "Frames"): after the handshake each
/// message, in each direction, is
///
///     LENGTH (4 bytes, big-endian) ‖ CIPHERTEXT ‖ TAG (16 bytes)
///
/// where LENGTH counts the ciphertext and the tag, and the ciphertext is the message (a JSON
/// object, without the newline a plain link ends it with, or a binary file chunk) under
/// ChaCha20-Poly1305 with that direction's key and its next counter nonce (`NoiseCipher`). The
/// length goes in clear: a changed length makes the frame's tag fail as surely as a changed byte.
///
/// Without a cipher (a `--stdio` link of files version 2, inside ssh's channel, which already
/// keeps the bytes secret and whole) a frame is `LENGTH ‖ MESSAGE`: the framing alone, so a
/// file's chunk can go as raw bytes.
package enum LinkFrames {
    /// Bytes of the length in front of each frame.
    package static let headerCount = 4
    /// Bytes a sealed frame adds to its message: the length and the tag.
    package static let overhead = headerCount + ChaCha20Poly1305.tagCount

    /// Bytes of the tag after a message: none without a cipher.
    static func tagCount(_ cipher: NoiseCipher?) -> Int { cipher == nil ? 0 : ChaCha20Poly1305.tagCount }
}

/// Seals the messages one side sends (frames them only, without a cipher).
package struct FrameSealer: Sendable {
    private var cipher: NoiseCipher?

    package init(_ cipher: NoiseCipher?) {
        self.cipher = cipher
    }

    /// Whether the frames are encrypted (not just framed).
    package var encrypts: Bool { cipher != nil }

    /// `line` as its frame: a JSON message loses its final newline; a binary one (its first
    /// byte 0x00, a file's chunk) goes whole, whatever its last byte.
    package mutating func seal(_ line: [UInt8]) -> [UInt8] {
        let count = line.last == 0x0A && line.first != 0 ? line.count - 1 : line.count
        let length = count + LinkFrames.tagCount(cipher)
        return [UInt8](unsafeUninitializedCapacity: LinkFrames.headerCount + length) { frame, initialized in
            let raw = UnsafeMutableRawBufferPointer(frame)
            raw.storeBytes(of: UInt32(length).bigEndian, as: UInt32.self)
            let body = UnsafeMutableRawBufferPointer(rebasing: raw[LinkFrames.headerCount..<(LinkFrames.headerCount + count)])
            line.withUnsafeBytes { body.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            let tag = UnsafeMutableRawBufferPointer(rebasing: raw[(LinkFrames.headerCount + count)...])
            cipher?.seal(body, tag: tag)
            initialized = raw.count
        }
    }
}

/// Opens the frames one side reads, from chunks of any size.
package struct FrameOpener: Sendable {
    /// nil: frames without a tag, taken as they come.
    private var cipher: NoiseCipher?
    /// The longest message (plaintext) a frame may carry.
    private let maxMessageBytes: Int
    /// A frame's length while fewer than its 4 bytes have come.
    private var header: [UInt8] = []
    /// The body (ciphertext and tag) of a frame whose length is known and whose bytes have not
    /// all come: made with room for all of them, so the bytes are copied once, and opened in
    /// place into the message handed out.
    private var pending: (body: Data, length: Int)?

    package init(_ cipher: NoiseCipher?, maxMessageBytes: Int) {
        self.cipher = cipher
        self.maxMessageBytes = maxMessageBytes
    }

    /// Bytes held of a frame not yet complete.
    package var pendingCount: Int { header.count + (pending.map { LinkFrames.headerCount + $0.body.count } ?? 0) }

    /// Opens the frames of `chunk` from `start`, handing each message to `body` in order, until
    /// the chunk is used up or `body` returns false (`start` is then past that frame). Returns
    /// why the link must end, when a frame is refused: nothing of it, or after it, is handed out.
    package mutating func split(_ chunk: UnsafeRawBufferPointer, from start: inout Int, _ body: (Data) -> Bool) -> Refusal? {
        while start < chunk.count {
            if pending == nil {
                let length: Int
                if header.isEmpty, chunk.count - start >= LinkFrames.headerCount {
                    length = Self.length(UnsafeRawBufferPointer(rebasing: chunk[start...]))
                    if let refusal = check(length) { return refusal }
                    let end = start + LinkFrames.headerCount + length
                    if end <= chunk.count {
                        // The usual case for a small message: the frame is whole in the chunk.
                        var message = Data(UnsafeRawBufferPointer(rebasing: chunk[(start + LinkFrames.headerCount)..<end]))
                        start = end
                        guard open(&message) else { return .forged(counter) }
                        guard body(message) else { return nil }
                        continue
                    }
                    start += LinkFrames.headerCount
                } else {
                    let taken = min(LinkFrames.headerCount - header.count, chunk.count - start)
                    header.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<(start + taken)]))
                    start += taken
                    guard header.count == LinkFrames.headerCount else { continue }
                    length = Self.length(header)
                    header = []
                    if let refusal = check(length) { return refusal }
                }
                pending = (Data(capacity: length), length)
            }
            // A frame that ends in a later chunk: its bytes so far, no more than it needs.
            guard var frame = pending?.body, let length = pending?.length else { continue }
            pending = nil  // the body is this function's alone while it grows: no copy on write
            let taken = min(length - frame.count, chunk.count - start)
            frame.append(UnsafeRawBufferPointer(rebasing: chunk[start..<(start + taken)]).assumingMemoryBound(to: UInt8.self))
            start += taken
            guard frame.count == length else {
                pending = (frame, length)
                continue
            }
            guard open(&frame) else { return .forged(counter) }
            guard body(frame) else { return nil }
        }
        return nil
    }

    /// A frame's length, from the first 4 bytes of `bytes`.
    private static func length(_ bytes: some Collection<UInt8>) -> Int {
        bytes.prefix(LinkFrames.headerCount).reduce(0) { $0 << 8 | Int($1) }
    }

    /// The number of the frame the cipher expects next (0 without one: nothing is forged).
    private var counter: UInt64 { cipher?.counter ?? 0 }

    private func check(_ length: Int) -> Refusal? {
        let tag = LinkFrames.tagCount(cipher)
        guard length >= tag else { return .tooShort(length) }
        // A message is never empty (JSON, or a chunk's header): without a tag, 0 is refused too.
        guard length > 0 else { return .empty }
        guard length - tag <= maxMessageBytes else { return .tooLong(length, max: maxMessageBytes, tagged: cipher != nil) }
        return nil
    }

    /// Opens one frame's ciphertext and tag in place into its message (the tag cut off); false
    /// when it does not open. Without a cipher the frame is the message.
    private mutating func open(_ frame: inout Data) -> Bool {
        guard cipher != nil else { return true }
        let count = frame.count - ChaCha20Poly1305.tagCount
        let opened = frame.withUnsafeMutableBytes { bytes in
            cipher?.open(UnsafeMutableRawBufferPointer(rebasing: bytes[..<count]),
                         tag: UnsafeRawBufferPointer(rebasing: bytes[count...])) ?? false
        }
        guard opened else { return false }
        frame.count = count
        return true
    }

    /// Why a frame was refused: each ends the link, and says no more than this about why.
    package enum Refusal: Error, Equatable, CustomStringConvertible {
        case tooShort(Int)
        case empty
        case tooLong(Int, max: Int, tagged: Bool = true)
        /// The frame did not open as the peer's message number N.
        case forged(UInt64)

        package var description: String {
            switch self {
            case .tooShort(let length): "a frame of \(length) bytes, shorter than its tag"
            case .empty: "an empty frame"
            case .tooLong(let length, let max, let tagged):
                "a frame of \(length) bytes, over the limit of \(max) bytes of message\(tagged ? " and a 16-byte tag" : "")"
            case .forged(let counter): "frame \(counter) does not open: altered, replayed, reordered, cut or not from the peer"
            }
        }
    }
}
