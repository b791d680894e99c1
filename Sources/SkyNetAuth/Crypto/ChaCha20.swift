/// The ChaCha20 stream cipher of RFC 8439 §2.3–2.4: a 256-bit key, a 96-bit nonce and a 32-bit
/// block counter. Only additions, rotations and XORs on the key's words: no branch or table
/// lookup depends on the key or the data, so its time tells nothing about them.
package struct ChaCha20: Sendable {
    package static let keyCount = 32
    package static let nonceCount = 12
    static let blockCount = 64

    /// The state's words 4…11 (the key) and 13…15 (the nonce); word 12 is the block counter.
    /// (Not private: the many-block path, `ChaCha20+Blocks.swift`, reads them too.)
    let key: Key
    let nonce: (UInt32, UInt32, UInt32)

    /// `key` must hold 32 bytes and `nonce` 12 (the callers are ours: a wrong size is a bug).
    package init(key: some Collection<UInt8>, nonce: some Collection<UInt8>) {
        precondition(key.count == Self.keyCount && nonce.count == Self.nonceCount, "ChaCha20 takes a 32-byte key and a 12-byte nonce")
        let n = Array(nonce).withUnsafeBytes { (LittleEndian.word32($0, 0), LittleEndian.word32($0, 4), LittleEndian.word32($0, 8)) }
        self.init(key: Self.words(key), nonce: n)
    }

    /// A key already read as words (`words`), and a nonce as its three words: no bytes to read
    /// per message.
    init(key: Key, nonce: (UInt32, UInt32, UInt32)) {
        self.key = key
        self.nonce = nonce
    }

    typealias Key = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    /// A 32-byte key as the state's eight words.
    static func words(_ key: some Collection<UInt8>) -> Key {
        Array(key).withUnsafeBytes { bytes in
            (LittleEndian.word32(bytes, 0), LittleEndian.word32(bytes, 4), LittleEndian.word32(bytes, 8), LittleEndian.word32(bytes, 12),
             LittleEndian.word32(bytes, 16), LittleEndian.word32(bytes, 20), LittleEndian.word32(bytes, 24), LittleEndian.word32(bytes, 28))
        }
    }

    /// XORs the key stream from block `counter` on into `buffer`, in place (encrypts and
    /// decrypts alike). The caller keeps the counter from wrapping (2^32 blocks: 256 GiB).
    /// Whole groups of 16, 8 or 4 blocks take the many-block path (`applyManyBlocks`); the
    /// last one to three blocks and a partial block take the one-block path below. Which path
    /// a byte takes depends on the buffer's length (and the build: `manyBlocksPay`) only.
    package func apply(to buffer: UnsafeMutableRawBufferPointer, counter: UInt32) {
        apply(to: buffer, counter: counter, manyBlocks: Self.manyBlocksPay)
    }

    /// Whether the many-block path is the faster one: in an optimized build, where its lanes
    /// are vector instructions. Unoptimized (a debug build, the tests'), it runs lane by lane
    /// through calls, some fifty times slower than one block at a time, and an encrypted
    /// link's event loop would stall behind it. The tests check both paths in either build.
    static var manyBlocksPay: Bool { !_isDebugAssertConfiguration() }

    /// `apply`, with the many-block path taken for whole groups of blocks or not.
    func apply(to buffer: UnsafeMutableRawBufferPointer, counter: UInt32, manyBlocks: Bool) {
        var offset = manyBlocks ? applyManyBlocks(to: buffer, counter: counter) : 0
        var counter = counter &+ UInt32(truncatingIfNeeded: offset / Self.blockCount)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { block in
            let stream = UnsafeMutableRawBufferPointer(block)
            while offset < buffer.count {
                keyStream(counter: counter, into: block)
                let count = min(Self.blockCount, buffer.count - offset)
                if count == Self.blockCount {
                    // Eight bytes at a time: a bytewise XOR, whatever the machine's byte order.
                    for index in 0..<8 {
                        let word = stream.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)
                        let at = offset + index * 8
                        let data = buffer.loadUnaligned(fromByteOffset: at, as: UInt64.self)
                        buffer.storeBytes(of: data ^ word, toByteOffset: at, as: UInt64.self)
                    }
                } else {
                    for index in 0..<count { buffer[offset + index] ^= stream[index] }
                }
                offset += count
                counter &+= 1
            }
        }
    }

    /// XORs the key stream into `bytes` (a copy), from block `counter` on.
    package func apply(to bytes: [UInt8], counter: UInt32) -> [UInt8] {
        var out = bytes
        out.withUnsafeMutableBytes { apply(to: $0, counter: counter) }
        return out
    }

    /// The 64 bytes of block `counter` (RFC 8439 §2.3), as 16 little-endian words.
    func keyStream(counter: UInt32, into block: UnsafeMutableBufferPointer<UInt32>) {
        let (k0, k1, k2, k3, k4, k5, k6, k7) = key
        let (n0, n1, n2) = nonce
        var x0: UInt32 = 0x6170_7865, x1: UInt32 = 0x3320_646e, x2: UInt32 = 0x7962_2d32, x3: UInt32 = 0x6b20_6574
        var x4 = k0, x5 = k1, x6 = k2, x7 = k3, x8 = k4, x9 = k5, x10 = k6, x11 = k7
        var x12 = counter, x13 = n0, x14 = n1, x15 = n2

        @inline(__always) func quarter(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32) {
            a &+= b; d ^= a; d = d << 16 | d >> 16
            c &+= d; b ^= c; b = b << 12 | b >> 20
            a &+= b; d ^= a; d = d << 8 | d >> 24
            c &+= d; b ^= c; b = b << 7 | b >> 25
        }
        for _ in 0..<10 {
            quarter(&x0, &x4, &x8, &x12)
            quarter(&x1, &x5, &x9, &x13)
            quarter(&x2, &x6, &x10, &x14)
            quarter(&x3, &x7, &x11, &x15)
            quarter(&x0, &x5, &x10, &x15)
            quarter(&x1, &x6, &x11, &x12)
            quarter(&x2, &x7, &x8, &x13)
            quarter(&x3, &x4, &x9, &x14)
        }
        block[0] = (x0 &+ 0x6170_7865).littleEndian
        block[1] = (x1 &+ 0x3320_646e).littleEndian
        block[2] = (x2 &+ 0x7962_2d32).littleEndian
        block[3] = (x3 &+ 0x6b20_6574).littleEndian
        block[4] = (x4 &+ k0).littleEndian
        block[5] = (x5 &+ k1).littleEndian
        block[6] = (x6 &+ k2).littleEndian
        block[7] = (x7 &+ k3).littleEndian
        block[8] = (x8 &+ k4).littleEndian
        block[9] = (x9 &+ k5).littleEndian
        block[10] = (x10 &+ k6).littleEndian
        block[11] = (x11 &+ k7).littleEndian
        block[12] = (x12 &+ counter).littleEndian
        block[13] = (x13 &+ n0).littleEndian
        block[14] = (x14 &+ n1).littleEndian
        block[15] = (x15 &+ n2).littleEndian
    }
}
