/// HMAC-SHA256 (RFC 2104) with the key's inner and outer states computed once, so each tag
/// costs only the message's blocks plus two.
package struct HMACSHA256: Sendable {
    package static let tagCount = 32

    /// SHA-256 after absorbing the key XOR ipad (0x36…), and XOR opad (0x5c…).
    private let inner: SHA256
    private let outer: SHA256

    /// Keys over 64 bytes are hashed first (RFC 2104 §2); shorter ones are padded with zeros.
    package init(key: [UInt8]) {
        let key = key.count > SHA256.blockCount ? SHA256.hash(key) : key
        var innerPad = [UInt8](repeating: 0x36, count: SHA256.blockCount)
        var outerPad = [UInt8](repeating: 0x5c, count: SHA256.blockCount)
        for (index, byte) in key.enumerated() {
            innerPad[index] ^= byte
            outerPad[index] ^= byte
        }
        var inner = SHA256()
        inner.update(innerPad)
        var outer = SHA256()
        outer.update(outerPad)
        self.inner = inner
        self.outer = outer
        // The pads hold the key; wipe them rather than leave it in freed memory.
        innerPad.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        outerPad.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }

    /// The tag of `message`.
    package func tag(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { bytes in tag { $0.update(bytes) } }
    }

    /// The tag of whatever `feed` puts into the inner hash (for messages in several parts,
    /// e.g. an 8-byte sequence number then a line, without concatenating them).
    package func tag(_ feed: (inout SHA256) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.tagCount) { buffer, initialized in
            tag(into: UnsafeMutableRawPointer(buffer.baseAddress.unsafelyUnwrapped), feed)
            initialized = Self.tagCount
        }
    }

    /// Writes the tag's 32 bytes at `tag` without allocating (for a caller that keeps its own
    /// buffer, e.g. to compare or truncate a line's MAC).
    func tag(into tag: UnsafeMutableRawPointer, _ feed: (inout SHA256) -> Void) {
        var hasher = inner
        feed(&hasher)
        withUnsafeTemporaryAllocation(byteCount: SHA256.digestCount, alignment: 8) { innerDigest in
            let digest = innerDigest.baseAddress.unsafelyUnwrapped
            hasher.finalize(into: digest)
            var outerHasher = outer
            outerHasher.update(UnsafeRawBufferPointer(start: digest, count: SHA256.digestCount))
            outerHasher.finalize(into: tag)
        }
    }
}
