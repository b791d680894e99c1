import Foundation
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime
import SkyNetTestSupport

/// The frames of an encrypted link: what opens, in any chunking, and why each wrong frame is
/// refused, with nothing of it handed out.
@Suite struct LinkFramesTests {
    static let key = [UInt8](repeating: 7, count: 32)

    func ends(max: Int = 1 << 20) -> (FrameSealer, FrameOpener) {
        (FrameSealer(NoiseCipher(key: Self.key)), FrameOpener(NoiseCipher(key: Self.key), maxMessageBytes: max))
    }

    /// Opens `bytes` fed in chunks of the given sizes (the last one takes the rest).
    func open(_ bytes: [UInt8], chunks sizes: [Int], with opener: inout FrameOpener) -> (messages: [[UInt8]], refusal: FrameOpener.Refusal?) {
        var messages: [[UInt8]] = [], offset = 0, index = 0
        while offset < bytes.count {
            let size = index < sizes.count ? sizes[index] : bytes.count - offset
            let chunk = Array(bytes[offset..<min(bytes.count, offset + max(1, size))])
            offset += chunk.count
            index += 1
            var start = 0
            let refusal = chunk.withUnsafeBytes { opener.split($0, from: &start) { messages.append(Array($0)); return true } }
            if let refusal { return (messages, refusal) }
        }
        return (messages, nil)
    }

    @Test func messagesOpenInOrderWhateverTheChunks() {
        var random = SeededRandom(seed: 34)
        for round in 0..<50 {
            var (sealer, opener) = ends()
            // JSON lines (a first byte other than 0x00), whose newline the frame drops.
            let messages = (0..<20).map { _ in
                [0x7B] + (0..<Int.random(in: 0...3000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            let wire = messages.flatMap { sealer.seal($0 + [0x0A]) }
            #expect(wire.count == messages.reduce(0) { $0 + $1.count + LinkFrames.overhead })
            let sizes = (0..<400).map { _ in round % 2 == 0 ? Int.random(in: 1...9, using: &random) : Int.random(in: 1...5000, using: &random) }
            let opened = open(wire, chunks: sizes, with: &opener)
            #expect(opened.refusal == nil)
            #expect(opened.messages == messages, "round \(round)")
            #expect(opener.pendingCount == 0)
        }
    }

    /// A binary message (a file's chunk: first byte 0x00) goes whole, a last byte 0x0A included.
    @Test func aBinaryMessageKeepsItsLastByte() {
        var (sealer, opener) = ends()
        let messages: [[UInt8]] = [[0, 1, 2, 0x0A], [0, 0x0A], [0x7B, 0x7D]]
        let wire = sealer.seal(messages[0]) + sealer.seal(messages[1]) + sealer.seal(messages[2] + [0x0A])
        let opened = open(wire, chunks: [], with: &opener)
        #expect(opened.refusal == nil)
        #expect(opened.messages == messages)
    }

    /// Without a cipher (a `--stdio` link of files version 2) a frame is its length and the
    /// message as it is; an empty one or one over the limit ends the link as a sealed one does.
    @Test func framesInClearCarryTheMessageAsItIs() {
        var sealer = FrameSealer(nil), opener = FrameOpener(nil, maxMessageBytes: 100)
        #expect(!sealer.encrypts && FrameSealer(NoiseCipher(key: Self.key)).encrypts)
        let wire = sealer.seal(Array(#"{"a":1}"#.utf8) + [0x0A]) + sealer.seal([0, 9, 0x0A])
        #expect(wire == [0, 0, 0, 7] + Array(#"{"a":1}"#.utf8) + [0, 0, 0, 3, 0, 9, 0x0A])
        let opened = open(wire, chunks: [1, 5, 2], with: &opener)
        #expect(opened.refusal == nil && opened.messages == [Array(#"{"a":1}"#.utf8), [0, 9, 0x0A]])
        var other = FrameOpener(nil, maxMessageBytes: 100)
        #expect(open([0, 0, 0, 0], chunks: [], with: &other).refusal == .empty)
        var third = FrameOpener(nil, maxMessageBytes: 100)
        let over = open([0, 0, 0, 101], chunks: [], with: &third).refusal
        #expect(over == .tooLong(101, max: 100, tagged: false))
        #expect(over?.description == "a frame of 101 bytes, over the limit of 100 bytes of message")
    }

    /// `body` returning false stops after that frame; the rest of the chunk opens later.
    @Test func stoppingLeavesTheRestOfTheChunkForLater() {
        var (sealer, opener) = ends()
        let wire = (0..<5).flatMap { sealer.seal(Array("m\($0)\n".utf8)) }
        var start = 0, seen: [String] = []
        wire.withUnsafeBytes { bytes in
            for _ in 0..<5 {
                let refusal = opener.split(bytes, from: &start) { seen.append(String(decoding: $0, as: UTF8.self)); return false }
                #expect(refusal == nil)
            }
        }
        #expect(seen == ["m0", "m1", "m2", "m3", "m4"])
        #expect(start == wire.count)
    }

    /// A length over the limit is refused from the header alone, before its bytes come.
    @Test func aLengthOverTheLimitIsRefusedFromItsHeader() {
        var (_, opener) = ends(max: 100)
        let header: [UInt8] = [0, 0, 0, 117]
        #expect(open(header, chunks: [1, 1, 1, 1], with: &opener).refusal == .tooLong(117, max: 100))
        var (_, other) = ends(max: 100)
        #expect(open([0, 0, 0, 15], chunks: [4], with: &other).refusal == .tooShort(15))
        var (sealer, atLimit) = ends(max: 100)
        let full = sealer.seal([UInt8](repeating: 0x41, count: 100))
        #expect(open(full, chunks: [3], with: &atLimit).messages.count == 1)
    }

    /// Every single bit flipped in a frame (length, ciphertext or tag) refuses it, and nothing
    /// of it or after it is handed out (a length made longer leaves the opener waiting for
    /// bytes that never open); a replayed or skipped frame fails the same way.
    @Test func anyChangedReplayedOrSkippedFrameIsRefused() {
        var (sealer, _) = ends()
        let first = sealer.seal(Array(#"{"type":"ping","id":1}"#.utf8))
        let second = sealer.seal(Array(#"{"type":"ping","id":2}"#.utf8))
        let third = sealer.seal(Array(#"{"type":"ping","id":3}"#.utf8))
        for bit in 0..<(second.count * 8) {
            var changed = second
            changed[bit / 8] ^= 1 << UInt8(bit % 8)
            var (_, opener) = ends()
            let opened = open(first + changed + third, chunks: [first.count + changed.count + third.count], with: &opener)
            #expect(opened.messages.count == 1, "bit \(bit)")
            #expect(opened.refusal != nil || (bit < 32 && opener.pendingCount > 0), "bit \(bit)")
        }
        var (_, replay) = ends()
        #expect(open(first + first, chunks: [], with: &replay).refusal == .forged(1))
        var (_, skip) = ends()
        #expect(open(first + third, chunks: [], with: &skip).refusal == .forged(1))
    }

    /// 10,000 random frames (random lengths within the limit, random bytes): each is refused,
    /// none crashes or is handed out.
    @Test func randomFramesAreRefusedAndNeverOpen() {
        var random = SeededRandom(seed: 10_000)
        for _ in 0..<10_000 {
            var (_, opener) = ends(max: 4096)
            let length = Int.random(in: 16...4112, using: &random)
            let frame = withUnsafeBytes(of: UInt32(length).bigEndian) { Array($0) }
                + (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let opened = open(frame, chunks: [Int.random(in: 1...frame.count, using: &random)], with: &opener)
            #expect(opened.messages.isEmpty)
            #expect(opened.refusal == .forged(0))
        }
    }
}
