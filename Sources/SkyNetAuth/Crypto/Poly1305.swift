/// The Poly1305 one-time authenticator of RFC 8439 §2.5: a 32-byte one-time key, a 16-byte tag.
/// The accumulator is kept in two 64-bit limbs and a small third one (h = h0 + h1·2^64 +
/// h2·2^128), r in two 64-bit limbs, and each block costs four full-width multiplications
/// (64 × 64 → 128 bits, `multipliedFullWidth`) and two small ones. The clamping, the carries
/// (overflow flags taken as numbers) and the final reduction use masks and shifts, never a
/// branch or an index on the key, the data or the accumulator. Written on `UInt64` alone, not
/// `UInt128`: as fast optimized, and twenty times faster in a debug build (the tests').
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
            var c: UInt64
            (h0, c) = Self.add(h0, m0)
            (h1, c) = Self.add(h1, m1, c)
            h2 = h2 &+ c &+ highBit

            let (p00h, p00l) = h0.multipliedFullWidth(by: r0)
            let (p11h, p11l) = h1.multipliedFullWidth(by: s1)
            let (p01h, p01l) = h0.multipliedFullWidth(by: r1)
            let (p10h, p10l) = h1.multipliedFullWidth(by: r0)
            let (d0l, c0) = Self.add(p00l, p11l)
            let d0h = p00h &+ p11h &+ c0
            var (d1l, c1) = Self.add(p01l, p10l)
            var d1h = p01h &+ p10h &+ c1
            (d1l, c1) = Self.add(d1l, h2 &* s1)
            d1h = d1h &+ c1
            (d1l, c1) = Self.add(d1l, d0h)
            d1h = d1h &+ c1
            let d2 = h2 &* r0 &+ d1h

            let fold = (d2 & ~3) &+ (d2 &>> 2)
            (h0, c) = Self.add(d0l, fold)
            (h1, c) = Self.add(d1l, c)
            h2 = (d2 & 3) &+ c
            at &+= 16
        }
        self.h0 = h0
        self.h1 = h1
        self.h2 = h2
    }

    /// a + b (+ carry), and the carry out as 0 or 1: the flag as a number, never a branch.
    @inline(__always)
    private static func add(_ a: UInt64, _ b: UInt64, _ carry: UInt64 = 0) -> (UInt64, UInt64) {
        let (partial, first) = a.addingReportingOverflow(b)
        let (sum, second) = partial.addingReportingOverflow(carry)
        return (sum, UInt64(unsafeBitCast(first, to: UInt8.self) | unsafeBitCast(second, to: UInt8.self)))
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
        let (g0, c0) = Self.add(h0, 5)
        let (g1, c1) = Self.add(h1, c0)
        let g2 = h2 &+ c1
        let takeG = 0 &- (g2 &>> 2)  // all ones when h ≥ p, else zero
        let f0 = (h0 & ~takeG) | (g0 & takeG)
        let f1 = (h1 & ~takeG) | (g1 & takeG)

        // (h mod p + s) mod 2^128.
        let (t0, carry) = Self.add(f0, pad.0)
        let t1 = f1 &+ pad.1 &+ carry
        h0 = 0; h1 = 0; h2 = 0
        LittleEndian.store(t0, tag, 0)
        LittleEndian.store(t1, tag, 8)
    }

    /// The tag of `message` under `key`.
    package static func tag(_ message: [UInt8], key: some Collection<UInt8>) -> [UInt8] {
        var mac = Poly1305(key: key)
        mac.update(message)
        return mac.finalize()
    }
}
