/// SHA-256 (FIPS 180-4), streaming.
///
/// Every file that travels and every authenticated line (through `HMACSHA256`) is hashed, so
/// `update` hands whole blocks straight from the caller's buffer to the unrolled block loop
/// (`SHA256+Compress.swift`), copies only a partial block, and allocates nothing.
package struct SHA256: Sendable {
    package static let digestCount = 32, blockCount = 64

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

    package init() {}

    /// Feeds `bytes`.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
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
    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Feeds the UTF-8 of `text`.
    package mutating func update(_ text: some StringProtocol) {
        var text = String(text)
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// The digest; the value is spent after this (call on a copy to keep hashing).
    package mutating func finalize() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.digestCount) { buffer, initialized in
            finalize(into: UnsafeMutableRawPointer(buffer.baseAddress.unsafelyUnwrapped))
            initialized = Self.digestCount
        }
    }

    /// The SHA-256 of `bytes`.
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
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
