/// The Poly1305 one-time authenticator of RFC 8439 §2.5: a 32-byte one-time key, a 16-byte tag.
/// The accumulator is kept in two 64-bit limbs and a small third one (h = h0 + h1·2^64 +
/// h2·2^128), r in two 64-bit limbs, and each block costs five full-width multiplications
/// (64 × 64 → 128 bits, `UInt128`). The clamping, the carries and the final reduction use
/// masks and shifts, never a branch or an index on the key, the data or the accumulator.
package struct Poly1305: Sendable {
    package static let keyCount = 32
    package static let tagCount = 16

    /// r (clamped) as two 64-bit limbs, and s1 = r1 + r1/4 = 5·r1/4: r1 is a multiple of 4 once
    /// clamped, so r1·2^128 = (r1/4)·2^130 ≡ 5·(r1/4) (mod 2^130 − 5), a product that fits.
    private let r0, r1, s1: UInt64
    /// The key's second half (s in RFC 8439), added at the end.
    private let pad: (UInt64, UInt64)
    /// The accumulator: below 5·2^128 between blocks (h2 ≤ 4), below 7·2^128 with a block added.
    private var h0: UInt64 = 0, h1: UInt64 = 0, h2: UInt64 = 0
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
        // r &= 0x0ffffffc0ffffffc0ffffffc0fffffff (RFC 8439 §2.5).
        r0 = LittleEndian.word64(key, 0) & 0x0fff_fffc_0fff_ffff
        r1 = LittleEndian.word64(key, 8) & 0x0fff_fffc_0fff_fffc
        s1 = r1 &+ (r1 &>> 2)
        pad = (LittleEndian.word64(key, 16), LittleEndian.word64(key, 24))
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
            withUnsafeBytes(of: &full) { blocks($0, from: 0, count: 1, highBit: 1) }
            pending = (0, 0)
            pendingCount = 0
        }
        let whole = (bytes.count - offset) / 16
        if whole > 0 {
            blocks(bytes, from: offset, count: whole, highBit: 1)
            offset += whole * 16
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

    /// h = (h + block + highBit·2^128)·r, partially reduced mod 2^130 − 5, for each of the
    /// `count` 16-byte blocks from `offset` on. The accumulator stays in locals for the loop.
    ///
    /// With h2 ≤ 6, r0 and s1 below 2^61: d0 = h0·r0 + h1·s1 and d1 = h0·r1 + h1·r0 + h2·s1
    /// stay below 2^127 and d2 = h2·r0 below 2^63, so no sum overflows. The bits from 2^130
    /// up are then folded back in times 5 (2^130 ≡ 5), leaving h2 ≤ 4.
    private mutating func blocks(_ bytes: UnsafeRawBufferPointer, from offset: Int, count: Int, highBit: UInt64) {
        var h0 = self.h0, h1 = self.h1, h2 = self.h2
        let r0 = self.r0, r1 = self.r1, s1 = self.s1
        var at = offset
        for _ in 0..<count {
            let m0 = LittleEndian.word64(bytes, at), m1 = LittleEndian.word64(bytes, at + 8)
            let a0 = UInt128(h0) &+ UInt128(m0)
            let a1 = UInt128(h1) &+ UInt128(m1) &+ (a0 &>> 64)
            h0 = UInt64(truncatingIfNeeded: a0)
            h1 = UInt64(truncatingIfNeeded: a1)
            h2 = h2 &+ UInt64(truncatingIfNeeded: a1 &>> 64) &+ highBit

            let d0 = UInt128(h0) &* UInt128(r0) &+ UInt128(h1) &* UInt128(s1)
            let d1 = UInt128(h0) &* UInt128(r1) &+ UInt128(h1) &* UInt128(r0) &+ UInt128(h2 &* s1) &+ (d0 &>> 64)
            let d2 = h2 &* r0 &+ UInt64(truncatingIfNeeded: d1 &>> 64)

            // d2's bits from 2 up are h's from 2^130 up: add them back times 5, (d2 & ~3) + d2/4.
            let c = UInt128((d2 & ~3) &+ (d2 &>> 2)) &+ UInt128(UInt64(truncatingIfNeeded: d0))
            let e = UInt128(UInt64(truncatingIfNeeded: d1)) &+ (c &>> 64)
            h0 = UInt64(truncatingIfNeeded: c)
            h1 = UInt64(truncatingIfNeeded: e)
            h2 = (d2 & 3) &+ UInt64(truncatingIfNeeded: e &>> 64)
            at &+= 16
        }
        self.h0 = h0
        self.h1 = h1
        self.h2 = h2
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
            withUnsafeBytes(of: &last) { blocks($0, from: 0, count: 1, highBit: 0) }
            pending = (0, 0)
            pendingCount = 0
        }
        // h < 5·2^128 < 2p here (h2 ≤ 4), so h mod p is h or h − p: g = h + 5 reaches 2^130
        // exactly when h ≥ p, and then g's low 128 bits are h − p's. Chosen by mask.
        let g0 = UInt128(h0) &+ 5
        let g1 = UInt128(h1) &+ (g0 &>> 64)
        let g2 = h2 &+ UInt64(truncatingIfNeeded: g1 &>> 64)
        let takeG = 0 &- (g2 &>> 2)  // all ones when h ≥ p, else zero
        let f0 = (h0 & ~takeG) | (UInt64(truncatingIfNeeded: g0) & takeG)
        let f1 = (h1 & ~takeG) | (UInt64(truncatingIfNeeded: g1) & takeG)

        // (h mod p + s) mod 2^128.
        let t0 = UInt128(f0) &+ UInt128(pad.0)
        let t1 = f1 &+ pad.1 &+ UInt64(truncatingIfNeeded: t0 &>> 64)
        h0 = 0; h1 = 0; h2 = 0
        LittleEndian.store(UInt64(truncatingIfNeeded: t0), tag, 0)
        LittleEndian.store(t1, tag, 8)
    }

    /// The tag of `message` under `key`.
    package static func tag(_ message: [UInt8], key: some Collection<UInt8>) -> [UInt8] {
        var mac = Poly1305(key: key)
        mac.update(message)
        return mac.finalize()
    }
}
