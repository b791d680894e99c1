extension ChaCha20 {
    /// XORs the key stream from block `counter` on into `buffer`, many blocks at a time: groups
    /// of 16 blocks while they last, then one group of 8 and one of 4 where they fit. Returns
    /// how many bytes it covered (a multiple of 256); the rest (at most three blocks and a
    /// partial one) is left to the one-block path. Which group size covers which bytes depends
    /// on the buffer's length alone.
    func applyManyBlocks(to buffer: UnsafeMutableRawBufferPointer, counter: UInt32) -> Int {
        var offset = applyBlocks(SIMD16<UInt32>.self, to: buffer, from: 0, counter: counter)
        offset += applyBlocks(SIMD8<UInt32>.self, to: buffer, from: offset, counter: counter &+ Self.blocks(offset))
        offset += applyBlocks(SIMD4<UInt32>.self, to: buffer, from: offset, counter: counter &+ Self.blocks(offset))
        return offset
    }

    /// How many blocks `bytes` (a multiple of 64) hold, as a counter step.
    private static func blocks(_ bytes: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: bytes / blockCount)
    }

    /// XORs the key stream of `Lanes.scalarCount` blocks at a time into `buffer` from `start`,
    /// block `counter` first, for as many whole groups as fit; returns how many bytes it covered.
    ///
    /// The blocks' states sit "vertically": vector `x[i]` holds word i of each block, one
    /// block per lane, so every quarter round is the same additions, XORs and rotations
    /// (RFC 8439 §2.1) done on all lanes at once, with no shuffling inside the rounds. The
    /// lanes differ only in the block counter (word 12). Sixteen lanes outrun four on x86-64's
    /// SSE2 (the compiler gives each vector four registers and has four times the independent
    /// work to schedule) though the state no longer fits in registers. As in the one-block
    /// path, nothing branches on or is indexed by the key, the nonce or the data: the loops run
    /// on the buffer's length alone.
    @inline(__always)
    private func applyBlocks<Lanes: ChaChaLanes>(_: Lanes.Type, to buffer: UnsafeMutableRawBufferPointer, from start: Int,
                                                 counter: UInt32) -> Int {
        let groupCount = Self.blockCount * Lanes.scalarCount
        let groups = (buffer.count - start) / groupCount
        guard groups > 0 else { return 0 }
        let (k0, k1, k2, k3, k4, k5, k6, k7) = key
        let (n0, n1, n2) = nonce
        var counters = Lanes(repeating: counter)
        for lane in counters.indices { counters[lane] &+= UInt32(truncatingIfNeeded: lane) }
        for group in 0..<groups {
            var x0 = Lanes(repeating: 0x6170_7865), x1 = Lanes(repeating: 0x3320_646e)
            var x2 = Lanes(repeating: 0x7962_2d32), x3 = Lanes(repeating: 0x6b20_6574)
            var x4 = Lanes(repeating: k0), x5 = Lanes(repeating: k1), x6 = Lanes(repeating: k2), x7 = Lanes(repeating: k3)
            var x8 = Lanes(repeating: k4), x9 = Lanes(repeating: k5), x10 = Lanes(repeating: k6), x11 = Lanes(repeating: k7)
            var x12 = counters, x13 = Lanes(repeating: n0), x14 = Lanes(repeating: n1), x15 = Lanes(repeating: n2)
            for _ in 0..<10 {
                Self.quarter(&x0, &x4, &x8, &x12)
                Self.quarter(&x1, &x5, &x9, &x13)
                Self.quarter(&x2, &x6, &x10, &x14)
                Self.quarter(&x3, &x7, &x11, &x15)
                Self.quarter(&x0, &x5, &x10, &x15)
                Self.quarter(&x1, &x6, &x11, &x12)
                Self.quarter(&x2, &x7, &x8, &x13)
                Self.quarter(&x3, &x4, &x9, &x14)
            }
            x0 = x0 &+ Lanes(repeating: 0x6170_7865); x1 = x1 &+ Lanes(repeating: 0x3320_646e)
            x2 = x2 &+ Lanes(repeating: 0x7962_2d32); x3 = x3 &+ Lanes(repeating: 0x6b20_6574)
            x4 = x4 &+ Lanes(repeating: k0); x5 = x5 &+ Lanes(repeating: k1); x6 = x6 &+ Lanes(repeating: k2); x7 = x7 &+ Lanes(repeating: k3)
            x8 = x8 &+ Lanes(repeating: k4); x9 = x9 &+ Lanes(repeating: k5); x10 = x10 &+ Lanes(repeating: k6); x11 = x11 &+ Lanes(repeating: k7)
            x12 = x12 &+ counters; x13 = x13 &+ Lanes(repeating: n0); x14 = x14 &+ Lanes(repeating: n1); x15 = x15 &+ Lanes(repeating: n2)

            // Block j of the group is lane j of x0…x15, its bytes 0–15 lane j of x0…x3, and so on.
            let base = start + group * groupCount
            Lanes.xorRows(x0, x1, x2, x3, into: buffer, at: base)
            Lanes.xorRows(x4, x5, x6, x7, into: buffer, at: base + 16)
            Lanes.xorRows(x8, x9, x10, x11, into: buffer, at: base + 32)
            Lanes.xorRows(x12, x13, x14, x15, into: buffer, at: base + 48)
            counters = counters &+ Lanes(repeating: UInt32(Lanes.scalarCount))
        }
        return groups * groupCount
    }

    /// The quarter round of RFC 8439 §2.1 on every lane's block at once.
    @inline(__always)
    private static func quarter<Lanes: ChaChaLanes>(_ a: inout Lanes, _ b: inout Lanes, _ c: inout Lanes, _ d: inout Lanes) {
        a = a &+ b; d = rotate(d ^ a, 16)
        c = c &+ d; b = rotate(b ^ c, 12)
        a = a &+ b; d = rotate(d ^ a, 8)
        c = c &+ d; b = rotate(b ^ c, 7)
    }

    /// Each lane rotated left by `count` (0 < count < 32). The two halves share no bit, so `&+`
    /// joins them as `|` would; written with `|`, the compiler sees a rotation and, with no
    /// vector rotate in SSE2, does it one lane at a time, several times slower.
    @inline(__always)
    private static func rotate<Lanes: ChaChaLanes>(_ value: Lanes, _ count: UInt32) -> Lanes {
        (value &<< count) &+ (value &>> (32 &- count))
    }
}

/// The vectors the many-block path runs on, one block per lane. Their lane-wise `&+` and `^`
/// are the standard library's concrete ones for UInt32 lanes (a vector instruction each): code
/// generic over `SIMD` alone would get the generic ones, which go lane by lane. (For the same
/// reason the kernel writes `a = a &+ b`: `a &+= b` there is the generic, lane-by-lane one.)
protocol ChaChaLanes: SIMD where Scalar == UInt32 {
    static func &+ (lhs: Self, rhs: Self) -> Self
    static func ^ (lhs: Self, rhs: Self) -> Self

    /// XORs words w…w+3 of each lane's block (lane j of `a`, `b`, `c`, `d`) into bytes
    /// 4w…4w+15 of that block, block j being the 64 bytes from `offset` + 64·j.
    static func xorRows(_ a: Self, _ b: Self, _ c: Self, _ d: Self, into buffer: UnsafeMutableRawBufferPointer, at offset: Int)
}

extension SIMD4: ChaChaLanes where Scalar == UInt32 {
    @inline(__always)
    static func xorRows(_ a: Self, _ b: Self, _ c: Self, _ d: Self, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        // A 4×4 transpose, by pairs of words first: row j is lane j of a, b, c, d.
        let ab01 = Self(a[0], b[0], a[1], b[1]), ab23 = Self(a[2], b[2], a[3], b[3])
        let cd01 = Self(c[0], d[0], c[1], d[1]), cd23 = Self(c[2], d[2], c[3], d[3])
        xorRow(Self(ab01[0], ab01[1], cd01[0], cd01[1]), into: buffer, at: offset)
        xorRow(Self(ab01[2], ab01[3], cd01[2], cd01[3]), into: buffer, at: offset + 64)
        xorRow(Self(ab23[0], ab23[1], cd23[0], cd23[1]), into: buffer, at: offset + 128)
        xorRow(Self(ab23[2], ab23[3], cd23[2], cd23[3]), into: buffer, at: offset + 192)
    }

    /// Four key-stream words XORed into the 16 bytes at `offset`, each word's bytes in
    /// little-endian order whatever the machine's.
    @inline(__always)
    private static func xorRow(_ words: Self, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        let data = buffer.loadUnaligned(fromByteOffset: offset, as: Self.self)
        buffer.storeBytes(of: data ^ littleEndian(words), toByteOffset: offset, as: Self.self)
    }

    /// `words` as stored little-endian: unchanged on a little-endian machine, each lane's bytes
    /// reversed on a big-endian one (the test is on a constant, folded when compiled).
    @inline(__always)
    private static func littleEndian(_ words: Self) -> Self {
        guard UInt32(1).littleEndian != 1 else { return words }
        let byte = Self(repeating: 0xff)
        return (words &<< 24) | ((words & (byte &<< 8)) &<< 8) | ((words &>> 8) & (byte &<< 8)) | (words &>> 24)
    }
}

extension SIMD8: ChaChaLanes where Scalar == UInt32 {
    /// Blocks 0–3 from the low halves, 4–7 from the high halves.
    @inline(__always)
    static func xorRows(_ a: Self, _ b: Self, _ c: Self, _ d: Self, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        SIMD4.xorRows(a.lowHalf, b.lowHalf, c.lowHalf, d.lowHalf, into: buffer, at: offset)
        SIMD4.xorRows(a.highHalf, b.highHalf, c.highHalf, d.highHalf, into: buffer, at: offset + 256)
    }
}

extension SIMD16: ChaChaLanes where Scalar == UInt32 {
    /// Blocks 0–7 from the low halves, 8–15 from the high halves.
    @inline(__always)
    static func xorRows(_ a: Self, _ b: Self, _ c: Self, _ d: Self, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        SIMD8.xorRows(a.lowHalf, b.lowHalf, c.lowHalf, d.lowHalf, into: buffer, at: offset)
        SIMD8.xorRows(a.highHalf, b.highHalf, c.highHalf, d.highHalf, into: buffer, at: offset + 512)
    }
}
