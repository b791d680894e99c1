import SkyNetRuntime

/// The ChaCha20-Poly1305 AEAD of RFC 8439 §2.8: a 256-bit key, a 96-bit nonce that must never
/// repeat under one key, additional data that is authenticated but not encrypted, and a
/// 16-byte tag after the ciphertext. Opening checks the tag in constant time before it
/// decrypts anything: a forged or changed message is refused whole.
package struct ChaCha20Poly1305: Sendable {
    package static let keyCount = 32
    package static let nonceCount = 12
    package static let tagCount = 16

    private let key: ChaCha20.Key

    /// `key` must hold 32 bytes.
    package init(key: some Collection<UInt8>) {
        precondition(key.count == Self.keyCount, "ChaCha20-Poly1305 takes a 32-byte key")
        self.key = ChaCha20.words(key)
    }

    /// The longest message: ChaCha20's block counter starts at 1 and must not wrap (RFC 8439
    /// §2.8), about 256 GiB.
    static let maxMessageCount = (1 << 32 - 1) * 64

    /// A nonce as ChaCha20's three state words (its bytes 0–3, 4–7, 8–11, little-endian).
    typealias Nonce = (UInt32, UInt32, UInt32)

    static func nonce(_ bytes: [UInt8]) -> Nonce {
        precondition(bytes.count == nonceCount, "ChaCha20-Poly1305 takes a 12-byte nonce")
        return bytes.withUnsafeBytes { (LittleEndian.word32($0, 0), LittleEndian.word32($0, 4), LittleEndian.word32($0, 8)) }
    }

    /// Encrypts `buffer` in place and writes the tag over `aad` and the ciphertext to `tag`
    /// (16 bytes). Nothing is allocated: a small message costs its blocks and no more.
    func seal(_ buffer: UnsafeMutableRawBufferPointer, nonce: Nonce, aad: UnsafeRawBufferPointer, tag: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count <= Self.maxMessageCount, "a ChaCha20-Poly1305 message holds at most 256 GiB")
        let cipher = ChaCha20(key: key, nonce: nonce)
        var mac = Self.authenticator(cipher)
        cipher.apply(to: buffer, counter: 1)
        Self.tag(&mac, aad: aad, ciphertext: UnsafeRawBufferPointer(buffer), into: tag)
    }

    /// Checks `tag` over `aad` and the ciphertext in `buffer`, then decrypts it in place; false
    /// (and `buffer` untouched) when the tag does not match.
    func open(_ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer, nonce: Nonce, aad: UnsafeRawBufferPointer) -> Bool {
        guard buffer.count <= Self.maxMessageCount else { return false }
        let cipher = ChaCha20(key: key, nonce: nonce)
        var mac = Self.authenticator(cipher)
        var expected = (UInt64(0), UInt64(0))
        let equal = withUnsafeMutableBytes(of: &expected) { computed in
            Self.tag(&mac, aad: aad, ciphertext: UnsafeRawBufferPointer(buffer), into: computed)
            return Secrets.equal(UnsafeRawBufferPointer(computed), tag)
        }
        guard equal else { return false }
        cipher.apply(to: buffer, counter: 1)
        return true
    }

    /// Encrypts `buffer` in place and returns the tag over `aad` and the ciphertext.
    package func seal(_ buffer: UnsafeMutableRawBufferPointer, nonce: [UInt8], aad: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.tagCount) { tag, count in
            seal(buffer, nonce: Self.nonce(nonce), aad: aad, tag: UnsafeMutableRawBufferPointer(tag))
            count = Self.tagCount
        }
    }

    /// Checks `tag` over `aad` and the ciphertext in `buffer`, then decrypts it in place; false
    /// (and `buffer` untouched) when the tag does not match.
    package func open(_ buffer: UnsafeMutableRawBufferPointer, tag: some Collection<UInt8>, nonce: [UInt8],
                      aad: UnsafeRawBufferPointer) -> Bool {
        guard tag.count == Self.tagCount else { return false }
        return Array(tag).withUnsafeBytes { open(buffer, tag: $0, nonce: Self.nonce(nonce), aad: aad) }
    }

    /// `plaintext` sealed: the ciphertext, then the 16-byte tag.
    package func seal(_ plaintext: [UInt8], nonce: [UInt8], aad: [UInt8] = []) -> [UInt8] {
        var sealed = plaintext
        let tag = sealed.withUnsafeMutableBytes { buffer in aad.withUnsafeBytes { seal(buffer, nonce: nonce, aad: $0) } }
        return sealed + tag
    }

    /// The plaintext of `sealed` (ciphertext then tag); nil when it is too short or its tag
    /// does not match.
    package func open(_ sealed: [UInt8], nonce: [UInt8], aad: [UInt8] = []) -> [UInt8]? {
        guard sealed.count >= Self.tagCount else { return nil }
        var plaintext = Array(sealed.dropLast(Self.tagCount))
        let tag = sealed.suffix(Self.tagCount)
        let opened = plaintext.withUnsafeMutableBytes { buffer in aad.withUnsafeBytes { open(buffer, tag: tag, nonce: nonce, aad: $0) } }
        return opened ? plaintext : nil
    }

    /// Poly1305 keyed with its one-time key: the first 32 bytes of block 0 (RFC 8439 §2.6).
    private static func authenticator(_ cipher: ChaCha20) -> Poly1305 {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { block in
            cipher.keyStream(counter: 0, into: block)
            let mac = Poly1305(key: UnsafeRawBufferPointer(block))
            block.update(repeating: 0)  // the one-time key does not outlive its use
            return mac
        }
    }

    /// aad, zeros to 16, ciphertext, zeros to 16, both lengths as 64-bit little-endian.
    private static func tag(_ mac: inout Poly1305, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
                            into tag: UnsafeMutableRawBufferPointer) {
        mac.update(aad)
        mac.updateZeros((16 - aad.count % 16) % 16)
        mac.update(ciphertext)
        mac.updateZeros((16 - ciphertext.count % 16) % 16)
        withUnsafeBytes(of: (UInt64(aad.count).littleEndian, UInt64(ciphertext.count).littleEndian)) { mac.update($0) }
        mac.finalize(into: tag)
    }
}
