extension ChaCha20 {
    /// Four blocks side by side: one state word of each block per vector lane.
    typealias Lanes = SIMD4<UInt32>

    /// How many blocks `applyFourBlocks` computes at once.
    static let laneCount = 4

    /// XORs the key stream of blocks `counter`, `counter` + 1, … into `buffer`, four blocks
    /// (256 bytes) at a time, for as many whole groups of four as `buffer` holds; returns how
    /// many bytes it covered (a multiple of 256). The rest is left to the one-block path.
    ///
    /// The four blocks' states sit "vertically": vector `x[i]` holds word i of each block, so
    /// every quarter round is the same additions, XORs and rotations (RFC 8439 §2.1) done on
    /// four lanes at once, with no shuffling inside the rounds. The lanes differ only in the
    /// block counter (word 12). As in the one-block path, nothing branches on or is indexed by
    /// the key, the nonce or the data: the loop runs on the buffer's length alone.
    func applyFourBlocks(to buffer: UnsafeMutableRawBufferPointer, counter: UInt32) -> Int {
        let groupCount = Self.blockCount * Self.laneCount
        let groups = buffer.count / groupCount
        guard groups > 0 else { return 0 }
        let (k0, k1, k2, k3, k4, k5, k6, k7) = key
        let (n0, n1, n2) = nonce
        var counters = Lanes(repeating: counter) &+ Lanes(0, 1, 2, 3)
        for group in 0..<groups {
            let start = counters
            var x0 = Lanes(repeating: 0x6170_7865), x1 = Lanes(repeating: 0x3320_646e)
            var x2 = Lanes(repeating: 0x7962_2d32), x3 = Lanes(repeating: 0x6b20_6574)
            var x4 = Lanes(repeating: k0), x5 = Lanes(repeating: k1), x6 = Lanes(repeating: k2), x7 = Lanes(repeating: k3)
            var x8 = Lanes(repeating: k4), x9 = Lanes(repeating: k5), x10 = Lanes(repeating: k6), x11 = Lanes(repeating: k7)
            var x12 = start, x13 = Lanes(repeating: n0), x14 = Lanes(repeating: n1), x15 = Lanes(repeating: n2)
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
            x0 &+= Lanes(repeating: 0x6170_7865); x1 &+= Lanes(repeating: 0x3320_646e)
            x2 &+= Lanes(repeating: 0x7962_2d32); x3 &+= Lanes(repeating: 0x6b20_6574)
            x4 &+= Lanes(repeating: k0); x5 &+= Lanes(repeating: k1); x6 &+= Lanes(repeating: k2); x7 &+= Lanes(repeating: k3)
            x8 &+= Lanes(repeating: k4); x9 &+= Lanes(repeating: k5); x10 &+= Lanes(repeating: k6); x11 &+= Lanes(repeating: k7)
            x12 &+= start; x13 &+= Lanes(repeating: n0); x14 &+= Lanes(repeating: n1); x15 &+= Lanes(repeating: n2)

            // Block j of the four is lane j of x0…x15: each row of four words (16 bytes of
            // one block) is gathered from four vectors, then XORed into the data.
            let base = group * groupCount
            Self.xorRows(x0, x1, x2, x3, into: buffer, at: base)
            Self.xorRows(x4, x5, x6, x7, into: buffer, at: base + 16)
            Self.xorRows(x8, x9, x10, x11, into: buffer, at: base + 32)
            Self.xorRows(x12, x13, x14, x15, into: buffer, at: base + 48)
            counters &+= Lanes(repeating: 4)
        }
        return groups * groupCount
    }

    /// The quarter round of RFC 8439 §2.1 on four blocks' words at once.
    @inline(__always)
    private static func quarter(_ a: inout Lanes, _ b: inout Lanes, _ c: inout Lanes, _ d: inout Lanes) {
        a &+= b; d ^= a; d = rotate(d, 16)
        c &+= d; b ^= c; b = rotate(b, 12)
        a &+= b; d ^= a; d = rotate(d, 8)
        c &+= d; b ^= c; b = rotate(b, 7)
    }

    /// Each lane rotated left by `count` (0 < count < 32). The two halves share no bit, so `&+`
    /// joins them as `|` would; written with `|`, the compiler sees a rotation and, with no
    /// vector rotate in SSE2, does it one lane at a time, several times slower.
    @inline(__always)
    private static func rotate(_ value: Lanes, _ count: UInt32) -> Lanes {
        (value &<< count) &+ (value &>> (32 &- count))
    }

    /// Words w, w+1, w+2, w+3 of the four blocks (`a`, `b`, `c`, `d`: word w… of each block in
    /// its lanes) XORed into the 16 bytes at `offset` of each block, blocks 64 bytes apart.
    @inline(__always)
    private static func xorRows(_ a: Lanes, _ b: Lanes, _ c: Lanes, _ d: Lanes,
                                into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        // A 4×4 transpose: rows of two words first, then whole rows.
        let ab01 = Lanes(a[0], b[0], a[1], b[1]), ab23 = Lanes(a[2], b[2], a[3], b[3])
        let cd01 = Lanes(c[0], d[0], c[1], d[1]), cd23 = Lanes(c[2], d[2], c[3], d[3])
        xorRow(Lanes(ab01[0], ab01[1], cd01[0], cd01[1]), into: buffer, at: offset)
        xorRow(Lanes(ab01[2], ab01[3], cd01[2], cd01[3]), into: buffer, at: offset + 64)
        xorRow(Lanes(ab23[0], ab23[1], cd23[0], cd23[1]), into: buffer, at: offset + 128)
        xorRow(Lanes(ab23[2], ab23[3], cd23[2], cd23[3]), into: buffer, at: offset + 192)
    }

    /// Four key-stream words XORed into the 16 bytes at `offset`, each word's bytes in
    /// little-endian order whatever the machine's.
    @inline(__always)
    private static func xorRow(_ words: Lanes, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        let data = buffer.loadUnaligned(fromByteOffset: offset, as: Lanes.self)
        buffer.storeBytes(of: data ^ littleEndian(words), toByteOffset: offset, as: Lanes.self)
    }

    /// `words` as stored little-endian: unchanged on a little-endian machine, each lane's bytes
    /// reversed on a big-endian one (the test is on a constant, folded when compiled).
    @inline(__always)
    private static func littleEndian(_ words: Lanes) -> Lanes {
        guard UInt32(1).littleEndian != 1 else { return words }
        let bytes = Lanes(repeating: 0xff)
        return (words &<< 24) | ((words & (bytes &<< 8)) &<< 8) | ((words &>> 8) & (bytes &<< 8)) | (words &>> 24)
    }
}
