/// SHA-256 (FIPS 180-4), streaming.
///
/// Every authenticated line is hashed (through `HMACSHA256`), so the block loop works on raw
/// pointers: big-endian loads by hand, the message schedule in one stack buffer per `update`,
/// no allocation per block, and `&+` throughout (the sums wrap by definition).
public struct SHA256: Sendable {
    public static let digestCount = 32, blockCount = 64

    /// The eight working words H0…H7 (FIPS 180-4 §5.3.3 gives their first values).
    struct Words: Sendable {
        var a: UInt32 = 0x6a09_e667, b: UInt32 = 0xbb67_ae85, c: UInt32 = 0x3c6e_f372, d: UInt32 = 0xa54f_f53a
        var e: UInt32 = 0x510e_527f, f: UInt32 = 0x9b05_688c, g: UInt32 = 0x1f83_d9ab, h: UInt32 = 0x5be0_cd19
    }

    /// 64 bytes of storage for a partial block, inline so that a copy of the hasher (an
    /// HMAC key state) costs no allocation.
    typealias Block = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    private var words = Words()
    private var pending: Block = (0, 0, 0, 0, 0, 0, 0, 0)
    /// How many bytes of `pending` hold input (0..<64).
    private var pendingCount = 0
    /// Bytes fed so far; the padding ends with it, in bits, modulo 2^64.
    private var byteCount: UInt64 = 0

    public init() {}

    /// Feeds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var input = bytes.baseAddress, !bytes.isEmpty else { return }
        var remaining = bytes.count
        byteCount &+= UInt64(truncatingIfNeeded: remaining)
        if pendingCount > 0 {
            let taken = min(Self.blockCount - pendingCount, remaining)
            let offset = pendingCount
            withUnsafeMutableBytes(of: &pending) { block in
                (block.baseAddress.unsafelyUnwrapped + offset).copyMemory(from: input, byteCount: taken)
            }
            pendingCount += taken
            input += taken
            remaining -= taken
            guard pendingCount == Self.blockCount else { return }
            compressPending()
        }
        let blocks = remaining / Self.blockCount
        if blocks > 0 {
            Self.compress(&words, input, blocks: blocks)
            input += blocks * Self.blockCount
            remaining -= blocks * Self.blockCount
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { block in
                block.baseAddress.unsafelyUnwrapped.copyMemory(from: input, byteCount: remaining)
            }
            pendingCount = remaining
        }
    }

    /// Feeds `bytes`.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Feeds the UTF-8 of `text`.
    public mutating func update(_ text: some StringProtocol) {
        var text = String(text)
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// The digest; the value is spent after this (call on a copy to keep hashing).
    public mutating func finalize() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.digestCount) { buffer, initialized in
            finalize(into: UnsafeMutableRawPointer(buffer.baseAddress.unsafelyUnwrapped))
            initialized = Self.digestCount
        }
    }

    /// The SHA-256 of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Writes the digest's 32 bytes at `digest` (no allocation, for HMAC); the value is spent
    /// after this and starts over empty.
    mutating func finalize(into digest: UnsafeMutableRawPointer) {
        let bitCount = byteCount &<< 3
        let used = pendingCount
        // Padding (§5.1.1): 0x80, zeros up to 56 mod 64, then the length in bits, big-endian.
        withUnsafeMutableBytes(of: &pending) { block in
            block[used] = 0x80
            for index in (used + 1)..<Self.blockCount { block[index] = 0 }
        }
        if used >= 56 {
            // No room for the length: it goes in a block of its own.
            compressPending()
            pending = (0, 0, 0, 0, 0, 0, 0, 0)
        }
        withUnsafeMutableBytes(of: &pending) { block in
            block.storeBytes(of: bitCount.bigEndian, toByteOffset: 56, as: UInt64.self)
        }
        compressPending()
        let w = words
        // A tuple of one type is laid out as a C array: H0…H7 in order, each big-endian.
        let digestWords = (w.a.bigEndian, w.b.bigEndian, w.c.bigEndian, w.d.bigEndian,
                           w.e.bigEndian, w.f.bigEndian, w.g.bigEndian, w.h.bigEndian)
        withUnsafeBytes(of: digestWords) { digest.copyMemory(from: $0.baseAddress.unsafelyUnwrapped, byteCount: Self.digestCount) }
        self = SHA256()
    }

    /// Compresses the full block in `pending`.
    private mutating func compressPending() {
        let block = pending
        withUnsafeBytes(of: block) { Self.compress(&words, $0.baseAddress.unsafelyUnwrapped, blocks: 1) }
        pendingCount = 0
    }
}

extension SHA256 {
    /// The round constants K0…K63 (§4.2.2).
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Runs the compression function (§6.2.2) over `blocks` whole blocks at `input`.
    static func compress(_ state: inout Words, _ input: UnsafeRawPointer, blocks: Int) {
        roundConstants.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                var block = input
                var s = state
                for _ in 0..<blocks {
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self))
                    }
                    for t in 16..<64 {
                        let w15 = w[t &- 15], w2 = w[t &- 2]
                        let s0 = rotate(w15, 7) ^ rotate(w15, 18) ^ (w15 &>> 3)
                        let s1 = rotate(w2, 17) ^ rotate(w2, 19) ^ (w2 &>> 10)
                        w[t] = w[t &- 16] &+ s0 &+ w[t &- 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, h) = (s.a, s.b, s.c, s.d, s.e, s.f, s.g, s.h)
                    for t in 0..<64 {
                        let sum1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)
                        let choose = (e & f) ^ (~e & g)
                        let t1 = h &+ sum1 &+ choose &+ k[t] &+ w[t]
                        let sum0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = sum0 &+ majority
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                    }
                    s.a &+= a; s.b &+= b; s.c &+= c; s.d &+= d
                    s.e &+= e; s.f &+= f; s.g &+= g; s.h &+= h
                    block += blockCount
                }
                state = s
            }
        }
    }

    /// Rotates right by `count` (0 < count < 32).
    @inline(__always)
    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value &>> count) | (value &<< (32 &- count))
    }
}
