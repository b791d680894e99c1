/// An element of GF(2^255 − 19) in five 51-bit limbs (radix 2^51), as X25519 needs it.
/// Every operation runs the same instructions whatever the values: no branch and no index
/// depends on them (the limbs of a secret stay secret).
struct FieldElement {
    var l0, l1, l2, l3, l4: UInt64

    static let mask: UInt64 = (1 << 51) - 1
    static let zero = FieldElement(l0: 0, l1: 0, l2: 0, l3: 0, l4: 0)
    static let one = FieldElement(l0: 1, l1: 0, l2: 0, l3: 0, l4: 0)

    /// 32 little-endian bytes; the top bit is ignored (RFC 7748 §5).
    init(bytes: [UInt8]) {
        let (w0, w1, w2, top) = bytes.withUnsafeBytes {
            (LittleEndian.word64($0, 0), LittleEndian.word64($0, 8), LittleEndian.word64($0, 16), LittleEndian.word64($0, 24))
        }
        let w3 = top & 0x7fff_ffff_ffff_ffff
        l0 = w0 & Self.mask
        l1 = (w0 >> 51 | w1 << 13) & Self.mask
        l2 = (w1 >> 38 | w2 << 26) & Self.mask
        l3 = (w2 >> 25 | w3 << 39) & Self.mask
        l4 = w3 >> 12
    }

    init(l0: UInt64, l1: UInt64, l2: UInt64, l3: UInt64, l4: UInt64) {
        (self.l0, self.l1, self.l2, self.l3, self.l4) = (l0, l1, l2, l3, l4)
    }

    /// The canonical 32 bytes (fully reduced below p).
    var bytes: [UInt8] {
        var h = self
        h.carry()
        h.carry()
        // q = 1 exactly when h ≥ p: h + 19 carries out of bit 255.
        var q = (h.l0 &+ 19) >> 51
        q = (h.l1 &+ q) >> 51
        q = (h.l2 &+ q) >> 51
        q = (h.l3 &+ q) >> 51
        q = (h.l4 &+ q) >> 51
        h.l0 &+= 19 &* q
        h.l1 &+= h.l0 >> 51; h.l0 &= Self.mask
        h.l2 &+= h.l1 >> 51; h.l1 &= Self.mask
        h.l3 &+= h.l2 >> 51; h.l2 &= Self.mask
        h.l4 &+= h.l3 >> 51; h.l3 &= Self.mask
        h.l4 &= Self.mask
        let words = [h.l0 | h.l1 << 51, h.l1 >> 13 | h.l2 << 38, h.l2 >> 26 | h.l3 << 25, h.l3 >> 39 | h.l4 << 12]
        var out = [UInt8]()
        out.reserveCapacity(32)
        for word in words {
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return out
    }

    /// Moves each limb's bits over 51 into the next (the top's, times 19, into the first).
    mutating func carry() {
        l1 &+= l0 >> 51; l0 &= Self.mask
        l2 &+= l1 >> 51; l1 &= Self.mask
        l3 &+= l2 >> 51; l2 &= Self.mask
        l4 &+= l3 >> 51; l3 &= Self.mask
        l0 &+= 19 &* (l4 >> 51); l4 &= Self.mask
    }

    static func + (a: FieldElement, b: FieldElement) -> FieldElement {
        FieldElement(l0: a.l0 &+ b.l0, l1: a.l1 &+ b.l1, l2: a.l2 &+ b.l2, l3: a.l3 &+ b.l3, l4: a.l4 &+ b.l4)
    }

    /// a − b + 4p, so no limb goes below zero (b's limbs are under 2^53).
    static func - (a: FieldElement, b: FieldElement) -> FieldElement {
        var r = FieldElement(l0: a.l0 &+ 0x1f_ffff_ffff_ffb4 &- b.l0, l1: a.l1 &+ 0x1f_ffff_ffff_fffc &- b.l1,
                             l2: a.l2 &+ 0x1f_ffff_ffff_fffc &- b.l2, l3: a.l3 &+ 0x1f_ffff_ffff_fffc &- b.l3,
                             l4: a.l4 &+ 0x1f_ffff_ffff_fffc &- b.l4)
        r.carry()
        return r
    }

    static func * (a: FieldElement, b: FieldElement) -> FieldElement {
        let b1 = 19 &* b.l1, b2 = 19 &* b.l2, b3 = 19 &* b.l3, b4 = 19 &* b.l4
        func m(_ x: UInt64, _ y: UInt64) -> UInt128 { UInt128(x) &* UInt128(y) }
        let r0 = m(a.l0, b.l0) &+ m(a.l1, b4) &+ m(a.l2, b3) &+ m(a.l3, b2) &+ m(a.l4, b1)
        let r1 = m(a.l0, b.l1) &+ m(a.l1, b.l0) &+ m(a.l2, b4) &+ m(a.l3, b3) &+ m(a.l4, b2)
        let r2 = m(a.l0, b.l2) &+ m(a.l1, b.l1) &+ m(a.l2, b.l0) &+ m(a.l3, b4) &+ m(a.l4, b3)
        let r3 = m(a.l0, b.l3) &+ m(a.l1, b.l2) &+ m(a.l2, b.l1) &+ m(a.l3, b.l0) &+ m(a.l4, b4)
        let r4 = m(a.l0, b.l4) &+ m(a.l1, b.l3) &+ m(a.l2, b.l2) &+ m(a.l3, b.l1) &+ m(a.l4, b.l0)
        return reduce(r0, r1, r2, r3, r4)
    }

    func squared() -> FieldElement { self * self }

    /// Squared `count` times (a public count).
    func squared(times count: Int) -> FieldElement {
        var r = self
        for _ in 0..<count { r = r * r }
        return r
    }

    /// Times a small constant (121665, X25519's a24).
    func times(_ small: UInt64) -> FieldElement {
        let s = UInt128(small)
        return Self.reduce(UInt128(l0) &* s, UInt128(l1) &* s, UInt128(l2) &* s, UInt128(l3) &* s, UInt128(l4) &* s)
    }

    private static func reduce(_ r0: UInt128, _ r1: UInt128, _ r2: UInt128, _ r3: UInt128, _ r4: UInt128) -> FieldElement {
        var r1 = r1, r2 = r2, r3 = r3, r4 = r4
        r1 &+= r0 >> 51
        let l0 = UInt64(truncatingIfNeeded: r0) & mask
        r2 &+= r1 >> 51
        let l1 = UInt64(truncatingIfNeeded: r1) & mask
        r3 &+= r2 >> 51
        let l2 = UInt64(truncatingIfNeeded: r2) & mask
        r4 &+= r3 >> 51
        let l3 = UInt64(truncatingIfNeeded: r3) & mask
        let top = UInt64(truncatingIfNeeded: r4 >> 51)
        let l4 = UInt64(truncatingIfNeeded: r4) & mask
        var first = l0 &+ 19 &* top
        let second = l1 &+ first >> 51
        first &= mask
        return FieldElement(l0: first, l1: second, l2: l2, l3: l3, l4: l4)
    }

    /// self^(p − 2) = 1/self (0 for 0), by a fixed chain of 254 squarings and 11 products.
    func inverted() -> FieldElement {
        let z2 = squared()
        let z9 = z2.squared(times: 2) * self
        let z11 = z9 * z2
        let z5_0 = z11.squared() * z9
        let z10_0 = z5_0.squared(times: 5) * z5_0
        let z20_0 = z10_0.squared(times: 10) * z10_0
        let z40_0 = z20_0.squared(times: 20) * z20_0
        let z50_0 = z40_0.squared(times: 10) * z10_0
        let z100_0 = z50_0.squared(times: 50) * z50_0
        let z200_0 = z100_0.squared(times: 100) * z100_0
        let z250_0 = z200_0.squared(times: 50) * z50_0
        return z250_0.squared(times: 5) * z11
    }

    /// Swaps `a` and `b` when `bit` is 1, leaves them when 0, by mask.
    static func conditionalSwap(_ a: inout FieldElement, _ b: inout FieldElement, _ bit: UInt64) {
        let mask = 0 &- bit
        var t = mask & (a.l0 ^ b.l0); a.l0 ^= t; b.l0 ^= t
        t = mask & (a.l1 ^ b.l1); a.l1 ^= t; b.l1 ^= t
        t = mask & (a.l2 ^ b.l2); a.l2 ^= t; b.l2 ^= t
        t = mask & (a.l3 ^ b.l3); a.l3 ^= t; b.l3 ^= t
        t = mask & (a.l4 ^ b.l4); a.l4 ^= t; b.l4 ^= t
    }
}
