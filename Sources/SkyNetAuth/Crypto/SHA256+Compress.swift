extension SHA256 {
    /// Runs the compression function (FIPS 180-4 §6.2.2) over `blocks` whole blocks at `input`.
    ///
    /// Everything moving files hashes every byte here (the file's SHA-256, and each sealed
    /// line's HMAC), so it is written for speed: the 64 rounds unrolled with the round
    /// constants K0…K63 as immediates (in order, one per `round`), the eight working
    /// variables and the 16-word window of the message schedule as locals (registers), the
    /// roles of a…h rotated by argument order rather than by moving values, words loaded
    /// big-endian straight from the caller's bytes, and `&+` throughout (sums wrap by definition).
    static func compress(_ state: inout Words, _ input: UnsafeRawPointer, blocks: Int) {
        var block = input
        var (a, b, c, d, e, f, g, h) = (state.a, state.b, state.c, state.d, state.e, state.f, state.g, state.h)
        for _ in 0..<blocks {
            let start = (a, b, c, d, e, f, g, h)
            var bc = b ^ c  // see `round`
            var w0 = word(block, 0), w1 = word(block, 1), w2 = word(block, 2), w3 = word(block, 3)
            var w4 = word(block, 4), w5 = word(block, 5), w6 = word(block, 6), w7 = word(block, 7)
            var w8 = word(block, 8), w9 = word(block, 9), w10 = word(block, 10), w11 = word(block, 11)
            var w12 = word(block, 12), w13 = word(block, 13), w14 = word(block, 14), w15 = word(block, 15)
            round(a, b, c, &d, e, f, g, &h, 0x428a_2f98 &+ w0, &bc)
            round(h, a, b, &c, d, e, f, &g, 0x7137_4491 &+ w1, &bc)
            round(g, h, a, &b, c, d, e, &f, 0xb5c0_fbcf &+ w2, &bc)
            round(f, g, h, &a, b, c, d, &e, 0xe9b5_dba5 &+ w3, &bc)
            round(e, f, g, &h, a, b, c, &d, 0x3956_c25b &+ w4, &bc)
            round(d, e, f, &g, h, a, b, &c, 0x59f1_11f1 &+ w5, &bc)
            round(c, d, e, &f, g, h, a, &b, 0x923f_82a4 &+ w6, &bc)
            round(b, c, d, &e, f, g, h, &a, 0xab1c_5ed5 &+ w7, &bc)
            round(a, b, c, &d, e, f, g, &h, 0xd807_aa98 &+ w8, &bc)
            round(h, a, b, &c, d, e, f, &g, 0x1283_5b01 &+ w9, &bc)
            round(g, h, a, &b, c, d, e, &f, 0x2431_85be &+ w10, &bc)
            round(f, g, h, &a, b, c, d, &e, 0x550c_7dc3 &+ w11, &bc)
            round(e, f, g, &h, a, b, c, &d, 0x72be_5d74 &+ w12, &bc)
            round(d, e, f, &g, h, a, b, &c, 0x80de_b1fe &+ w13, &bc)
            round(c, d, e, &f, g, h, a, &b, 0x9bdc_06a7 &+ w14, &bc)
            round(b, c, d, &e, f, g, h, &a, 0xc19b_f174 &+ w15, &bc)
            schedule(&w0, w14, w9, w1)
            round(a, b, c, &d, e, f, g, &h, 0xe49b_69c1 &+ w0, &bc)
            schedule(&w1, w15, w10, w2)
            round(h, a, b, &c, d, e, f, &g, 0xefbe_4786 &+ w1, &bc)
            schedule(&w2, w0, w11, w3)
            round(g, h, a, &b, c, d, e, &f, 0x0fc1_9dc6 &+ w2, &bc)
            schedule(&w3, w1, w12, w4)
            round(f, g, h, &a, b, c, d, &e, 0x240c_a1cc &+ w3, &bc)
            schedule(&w4, w2, w13, w5)
            round(e, f, g, &h, a, b, c, &d, 0x2de9_2c6f &+ w4, &bc)
            schedule(&w5, w3, w14, w6)
            round(d, e, f, &g, h, a, b, &c, 0x4a74_84aa &+ w5, &bc)
            schedule(&w6, w4, w15, w7)
            round(c, d, e, &f, g, h, a, &b, 0x5cb0_a9dc &+ w6, &bc)
            schedule(&w7, w5, w0, w8)
            round(b, c, d, &e, f, g, h, &a, 0x76f9_88da &+ w7, &bc)
            schedule(&w8, w6, w1, w9)
            round(a, b, c, &d, e, f, g, &h, 0x983e_5152 &+ w8, &bc)
            schedule(&w9, w7, w2, w10)
            round(h, a, b, &c, d, e, f, &g, 0xa831_c66d &+ w9, &bc)
            schedule(&w10, w8, w3, w11)
            round(g, h, a, &b, c, d, e, &f, 0xb003_27c8 &+ w10, &bc)
            schedule(&w11, w9, w4, w12)
            round(f, g, h, &a, b, c, d, &e, 0xbf59_7fc7 &+ w11, &bc)
            schedule(&w12, w10, w5, w13)
            round(e, f, g, &h, a, b, c, &d, 0xc6e0_0bf3 &+ w12, &bc)
            schedule(&w13, w11, w6, w14)
            round(d, e, f, &g, h, a, b, &c, 0xd5a7_9147 &+ w13, &bc)
            schedule(&w14, w12, w7, w15)
            round(c, d, e, &f, g, h, a, &b, 0x06ca_6351 &+ w14, &bc)
            schedule(&w15, w13, w8, w0)
            round(b, c, d, &e, f, g, h, &a, 0x1429_2967 &+ w15, &bc)
            schedule(&w0, w14, w9, w1)
            round(a, b, c, &d, e, f, g, &h, 0x27b7_0a85 &+ w0, &bc)
            schedule(&w1, w15, w10, w2)
            round(h, a, b, &c, d, e, f, &g, 0x2e1b_2138 &+ w1, &bc)
            schedule(&w2, w0, w11, w3)
            round(g, h, a, &b, c, d, e, &f, 0x4d2c_6dfc &+ w2, &bc)
            schedule(&w3, w1, w12, w4)
            round(f, g, h, &a, b, c, d, &e, 0x5338_0d13 &+ w3, &bc)
            schedule(&w4, w2, w13, w5)
            round(e, f, g, &h, a, b, c, &d, 0x650a_7354 &+ w4, &bc)
            schedule(&w5, w3, w14, w6)
            round(d, e, f, &g, h, a, b, &c, 0x766a_0abb &+ w5, &bc)
            schedule(&w6, w4, w15, w7)
            round(c, d, e, &f, g, h, a, &b, 0x81c2_c92e &+ w6, &bc)
            schedule(&w7, w5, w0, w8)
            round(b, c, d, &e, f, g, h, &a, 0x9272_2c85 &+ w7, &bc)
            schedule(&w8, w6, w1, w9)
            round(a, b, c, &d, e, f, g, &h, 0xa2bf_e8a1 &+ w8, &bc)
            schedule(&w9, w7, w2, w10)
            round(h, a, b, &c, d, e, f, &g, 0xa81a_664b &+ w9, &bc)
            schedule(&w10, w8, w3, w11)
            round(g, h, a, &b, c, d, e, &f, 0xc24b_8b70 &+ w10, &bc)
            schedule(&w11, w9, w4, w12)
            round(f, g, h, &a, b, c, d, &e, 0xc76c_51a3 &+ w11, &bc)
            schedule(&w12, w10, w5, w13)
            round(e, f, g, &h, a, b, c, &d, 0xd192_e819 &+ w12, &bc)
            schedule(&w13, w11, w6, w14)
            round(d, e, f, &g, h, a, b, &c, 0xd699_0624 &+ w13, &bc)
            schedule(&w14, w12, w7, w15)
            round(c, d, e, &f, g, h, a, &b, 0xf40e_3585 &+ w14, &bc)
            schedule(&w15, w13, w8, w0)
            round(b, c, d, &e, f, g, h, &a, 0x106a_a070 &+ w15, &bc)
            schedule(&w0, w14, w9, w1)
            round(a, b, c, &d, e, f, g, &h, 0x19a4_c116 &+ w0, &bc)
            schedule(&w1, w15, w10, w2)
            round(h, a, b, &c, d, e, f, &g, 0x1e37_6c08 &+ w1, &bc)
            schedule(&w2, w0, w11, w3)
            round(g, h, a, &b, c, d, e, &f, 0x2748_774c &+ w2, &bc)
            schedule(&w3, w1, w12, w4)
            round(f, g, h, &a, b, c, d, &e, 0x34b0_bcb5 &+ w3, &bc)
            schedule(&w4, w2, w13, w5)
            round(e, f, g, &h, a, b, c, &d, 0x391c_0cb3 &+ w4, &bc)
            schedule(&w5, w3, w14, w6)
            round(d, e, f, &g, h, a, b, &c, 0x4ed8_aa4a &+ w5, &bc)
            schedule(&w6, w4, w15, w7)
            round(c, d, e, &f, g, h, a, &b, 0x5b9c_ca4f &+ w6, &bc)
            schedule(&w7, w5, w0, w8)
            round(b, c, d, &e, f, g, h, &a, 0x682e_6ff3 &+ w7, &bc)
            schedule(&w8, w6, w1, w9)
            round(a, b, c, &d, e, f, g, &h, 0x748f_82ee &+ w8, &bc)
            schedule(&w9, w7, w2, w10)
            round(h, a, b, &c, d, e, f, &g, 0x78a5_636f &+ w9, &bc)
            schedule(&w10, w8, w3, w11)
            round(g, h, a, &b, c, d, e, &f, 0x84c8_7814 &+ w10, &bc)
            schedule(&w11, w9, w4, w12)
            round(f, g, h, &a, b, c, d, &e, 0x8cc7_0208 &+ w11, &bc)
            schedule(&w12, w10, w5, w13)
            round(e, f, g, &h, a, b, c, &d, 0x90be_fffa &+ w12, &bc)
            schedule(&w13, w11, w6, w14)
            round(d, e, f, &g, h, a, b, &c, 0xa450_6ceb &+ w13, &bc)
            schedule(&w14, w12, w7, w15)
            round(c, d, e, &f, g, h, a, &b, 0xbef9_a3f7 &+ w14, &bc)
            schedule(&w15, w13, w8, w0)
            round(b, c, d, &e, f, g, h, &a, 0xc671_78f2 &+ w15, &bc)
            a &+= start.0; b &+= start.1; c &+= start.2; d &+= start.3
            e &+= start.4; f &+= start.5; g &+= start.6; h &+= start.7
            block += blockCount
        }
        state = Words(a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h)
    }

    /// Message word `index` (0…15) of the block at `block`, read big-endian at any alignment.
    @inline(__always)
    private static func word(_ block: UnsafeRawPointer, _ index: Int) -> UInt32 {
        UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index &* 4, as: UInt32.self))
    }

    /// One round (§6.2.2 step 3) with the roles of the working variables given by position:
    /// only d (d + T1) and h (T1 + T2, the next a) change; `kw` is K[t] + W[t]. `bc` holds
    /// b ⊕ c and leaves with a ⊕ b, which is the next round's b ⊕ c: Maj(a,b,c) is then
    /// b ⊕ ((a ⊕ b) ∧ (b ⊕ c)), two operations.
    @inline(__always)
    private static func round(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32,
                              _ e: UInt32, _ f: UInt32, _ g: UInt32, _ h: inout UInt32,
                              _ kw: UInt32, _ bc: inout UInt32) {
        // Σ1(e) = e⋙6 ⊕ e⋙11 ⊕ e⋙25 and Σ0(a) = a⋙2 ⊕ a⋙13 ⊕ a⋙22 with the rotations
        // nested, ((e⋙14 ⊕ e)⋙5 ⊕ e)⋙6: side by side they are shorter in latency, but
        // x86-64 without BMI2 copies a register before each rotation of it, and the rounds
        // are limited by instruction count, not by the e → T1 → e path (about 10% faster
        // nested). h + K[t] + W[t] + Ch is summed before Σ1 arrives.
        let sum1 = rotate(rotate(rotate(e, 14) ^ e, 5) ^ e, 6)
        let choose = g ^ (e & (f ^ g))
        let t1 = (h &+ kw) &+ choose &+ sum1
        let sum0 = rotate(rotate(rotate(a, 9) ^ a, 11) ^ a, 2)
        let ab = a ^ b
        let majority = b ^ (ab & bc)
        bc = ab
        d &+= t1
        h = t1 &+ sum0 &+ majority
    }

    /// W[t] (§6.2.2 step 1) for t ≥ 16, written over W[t-16] in the 16-word window:
    /// W[t-16] + σ0(W[t-15]) + W[t-7] + σ1(W[t-2]).
    @inline(__always)
    private static func schedule(_ w16: inout UInt32, _ w2: UInt32, _ w7: UInt32, _ w15: UInt32) {
        // σ0(x) = x⋙7 ⊕ x⋙18 ⊕ x≫3 and σ1(x) = x⋙17 ⊕ x⋙19 ⊕ x≫10, the rotations nested
        // (off the critical path, so fewer copies beat shorter latency here).
        let s0 = rotate(rotate(w15, 11) ^ w15, 7) ^ (w15 &>> 3)
        let s1 = rotate(rotate(w2, 2) ^ w2, 17) ^ (w2 &>> 10)
        w16 = w16 &+ s0 &+ w7 &+ s1
    }

    /// Rotates right by `count` (0 < count < 32).
    @inline(__always)
    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value &>> count) | (value &<< (32 &- count))
    }
}
