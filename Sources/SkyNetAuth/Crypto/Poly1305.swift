/// The Poly1305 one-time authenticator of RFC 8439 §2.5: a 32-byte one-time key, a 16-byte tag.
/// The accumulator is kept in five 26-bit limbs, so every product fits 64 bits; the clamping,
/// the carries and the final reduction use masks, never a branch on the key, the data or the
/// accumulator.
package struct Poly1305: Sendable {
    package static let keyCount = 32
    package static let tagCount = 16

    /// r (clamped) and 5·r, in 26-bit limbs.
    private let r0, r1, r2, r3, r4: UInt64
    private let s1, s2, s3, s4: UInt64
    /// The key's second half, added at the end.
    private let pad: (UInt32, UInt32, UInt32, UInt32)
    private var h0: UInt64 = 0, h1: UInt64 = 0, h2: UInt64 = 0, h3: UInt64 = 0, h4: UInt64 = 0
    /// A partial block waiting for more bytes, kept inline (no allocation per message), and
    /// how many of its bytes are held.
    private var pending: (UInt64, UInt64) = (0, 0)
    private var pendingCount = 0

    /// `key` must hold 32 bytes (used for one message only).
    package init(key: some Collection<UInt8>) {
        precondition(key.count == Self.keyCount, "Poly1305 takes a 32-byte key")
        self = Array(key).withUnsafeBytes { Poly1305(key: $0) }
    }

    /// `key`: its first 32 bytes.
    init(key: UnsafeRawBufferPointer) {
        let t0 = Self.word(key, 0), t1 = Self.word(key, 4), t2 = Self.word(key, 8), t3 = Self.word(key, 12)
        // r &= 0x0ffffffc0ffffffc0ffffffc0fffffff, split into 26-bit limbs.
        r0 = UInt64(t0) & 0x3ff_ffff
        r1 = UInt64((t0 >> 26) | (t1 << 6)) & 0x3ff_ff03
        r2 = UInt64((t1 >> 20) | (t2 << 12)) & 0x3ff_c0ff
        r3 = UInt64((t2 >> 14) | (t3 << 18)) & 0x3f0_3fff
        r4 = UInt64(t3 >> 8) & 0x00f_ffff
        s1 = r1 * 5
        s2 = r2 * 5
        s3 = r3 * 5
        s4 = r4 * 5
        pad = (Self.word(key, 16), Self.word(key, 20), Self.word(key, 24), Self.word(key, 28))
    }

    private static func word(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        LittleEndian.word32(bytes, at)
    }

    /// Absorbs `bytes` (any length; blocks are 16 bytes, the last may be short).
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        var offset = 0
        if pendingCount > 0 {
            let take = min(16 - pendingCount, bytes.count)
            let held = pendingCount
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress.unsafelyUnwrapped.advanced(by: held).copyMemory(from: bytes.baseAddress.unsafelyUnwrapped, byteCount: take) }
            pendingCount += take
            offset = take
            guard pendingCount == 16 else { return }
            var full = pending
            withUnsafeBytes(of: &full) { block(at: $0, 0, highBit: 1 << 24) }
            pending = (0, 0)
            pendingCount = 0
        }
        while bytes.count - offset >= 16 {
            block(at: bytes, offset, highBit: 1 << 24)
            offset += 16
        }
        if offset < bytes.count {
            let rest = bytes.count - offset
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress.unsafelyUnwrapped.copyMemory(from: bytes.baseAddress.unsafelyUnwrapped + offset, byteCount: rest) }
            pendingCount = rest
        }
    }

    /// Absorbs `count` zero bytes (at most 15): the padding of RFC 8439's AEAD.
    mutating func updateZeros(_ count: Int) {
        withUnsafeBytes(of: (UInt64(0), UInt64(0))) { update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    }

    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// h = (h + block + 2^(8·16)) · r mod 2^130 − 5, for the 16 bytes at `offset`.
    private mutating func block(at bytes: UnsafeRawBufferPointer, _ offset: Int, highBit: UInt64) {
        let t0 = Self.word(bytes, offset), t1 = Self.word(bytes, offset + 4)
        let t2 = Self.word(bytes, offset + 8), t3 = Self.word(bytes, offset + 12)
        h0 += UInt64(t0) & 0x3ff_ffff
        h1 += UInt64((t0 >> 26) | (t1 << 6)) & 0x3ff_ffff
        h2 += UInt64((t1 >> 20) | (t2 << 12)) & 0x3ff_ffff
        h3 += UInt64((t2 >> 14) | (t3 << 18)) & 0x3ff_ffff
        h4 += UInt64(t3 >> 8) | highBit

        let d0 = h0 * r0 + h1 * s4 + h2 * s3 + h3 * s2 + h4 * s1
        var d1 = h0 * r1 + h1 * r0 + h2 * s4 + h3 * s3 + h4 * s2
        var d2 = h0 * r2 + h1 * r1 + h2 * r0 + h3 * s4 + h4 * s3
        var d3 = h0 * r3 + h1 * r2 + h2 * r1 + h3 * r0 + h4 * s4
        var d4 = h0 * r4 + h1 * r3 + h2 * r2 + h3 * r1 + h4 * r0

        var carry = d0 >> 26
        h0 = d0 & 0x3ff_ffff
        d1 += carry; carry = d1 >> 26; h1 = d1 & 0x3ff_ffff
        d2 += carry; carry = d2 >> 26; h2 = d2 & 0x3ff_ffff
        d3 += carry; carry = d3 >> 26; h3 = d3 & 0x3ff_ffff
        d4 += carry; carry = d4 >> 26; h4 = d4 & 0x3ff_ffff
        h0 += carry * 5; carry = h0 >> 26; h0 &= 0x3ff_ffff
        h1 += carry
    }

    /// The 16-byte tag. A short last block is padded with a 1 byte then zeros (RFC 8439 §2.5.1).
    package mutating func finalize() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.tagCount) { tag, count in
            finalize(into: UnsafeMutableRawBufferPointer(tag))
            count = Self.tagCount
        }
    }

    /// The tag, written to the first 16 bytes of `tag`.
    mutating func finalize(into tag: UnsafeMutableRawBufferPointer) {
        if pendingCount > 0 {
            let held = pendingCount
            var last = pending
            withUnsafeMutableBytes(of: &last) { $0[held] = 1 }  // the rest is already zero
            withUnsafeBytes(of: &last) { block(at: $0, 0, highBit: 0) }
            pending = (0, 0)
            pendingCount = 0
        }
        // Carry fully.
        var carry = h1 >> 26; h1 &= 0x3ff_ffff
        h2 += carry; carry = h2 >> 26; h2 &= 0x3ff_ffff
        h3 += carry; carry = h3 >> 26; h3 &= 0x3ff_ffff
        h4 += carry; carry = h4 >> 26; h4 &= 0x3ff_ffff
        h0 += carry * 5; carry = h0 >> 26; h0 &= 0x3ff_ffff
        h1 += carry

        // g = h + 5 − 2^130; take g when it did not borrow (h ≥ p), by mask.
        var g0 = h0 &+ 5; carry = g0 >> 26; g0 &= 0x3ff_ffff
        var g1 = h1 &+ carry; carry = g1 >> 26; g1 &= 0x3ff_ffff
        var g2 = h2 &+ carry; carry = g2 >> 26; g2 &= 0x3ff_ffff
        var g3 = h3 &+ carry; carry = g3 >> 26; g3 &= 0x3ff_ffff
        let g4 = h4 &+ carry &- (1 << 26)
        // g4's top bit is set when it borrowed: then keep h.
        let keepG = (g4 >> 63) &- 1  // all ones when no borrow
        let keepH = ~keepG
        h0 = (h0 & keepH) | (g0 & keepG)
        h1 = (h1 & keepH) | (g1 & keepG)
        h2 = (h2 & keepH) | (g2 & keepG)
        h3 = (h3 & keepH) | (g3 & keepG)
        h4 = (h4 & keepH) | (g4 & keepG)

        // h mod 2^128, as four 32-bit words, plus the pad.
        let w0 = (h0 | h1 << 26) & 0xffff_ffff
        let w1 = (h1 >> 6 | h2 << 20) & 0xffff_ffff
        let w2 = (h2 >> 12 | h3 << 14) & 0xffff_ffff
        let w3 = (h3 >> 18 | h4 << 8) & 0xffff_ffff
        var f = w0 + UInt64(pad.0)
        let o0 = UInt32(truncatingIfNeeded: f)
        f = w1 + UInt64(pad.1) + (f >> 32)
        let o1 = UInt32(truncatingIfNeeded: f)
        f = w2 + UInt64(pad.2) + (f >> 32)
        let o2 = UInt32(truncatingIfNeeded: f)
        f = w3 + UInt64(pad.3) + (f >> 32)
        let o3 = UInt32(truncatingIfNeeded: f)
        h0 = 0; h1 = 0; h2 = 0; h3 = 0; h4 = 0
        LittleEndian.store(o0, tag, 0)
        LittleEndian.store(o1, tag, 4)
        LittleEndian.store(o2, tag, 8)
        LittleEndian.store(o3, tag, 12)
    }

    /// The tag of `message` under `key`.
    package static func tag(_ message: [UInt8], key: some Collection<UInt8>) -> [UInt8] {
        var mac = Poly1305(key: key)
        mac.update(message)
        return mac.finalize()
    }
}
