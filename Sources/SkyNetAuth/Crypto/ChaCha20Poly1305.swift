import SkyNetRuntime

/// The ChaCha20-Poly1305 AEAD of RFC 8439 §2.8: a 256-bit key, a 96-bit nonce that must never
/// repeat under one key, additional data that is authenticated but not encrypted, and a
/// 16-byte tag after the ciphertext. Opening checks the tag in constant time before it
/// decrypts anything: a forged or changed message is refused whole.
package struct ChaCha20Poly1305: Sendable {
    package static let keyCount = 32
    package static let nonceCount = 12
    package static let tagCount = 16

    private let key: [UInt8]

    /// `key` must hold 32 bytes.
    package init(key: some Collection<UInt8>) {
        precondition(key.count == Self.keyCount, "ChaCha20-Poly1305 takes a 32-byte key")
        self.key = Array(key)
    }

    /// The longest message: ChaCha20's block counter starts at 1 and must not wrap (RFC 8439
    /// §2.8), about 256 GiB.
    static let maxMessageCount = (1 << 32 - 1) * 64

    /// Encrypts `buffer` in place and returns the tag over `aad` and the ciphertext.
    package func seal(_ buffer: UnsafeMutableRawBufferPointer, nonce: [UInt8], aad: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(buffer.count <= Self.maxMessageCount, "a ChaCha20-Poly1305 message holds at most 256 GiB")
        let cipher = ChaCha20(key: key, nonce: nonce)
        var mac = Poly1305(key: Self.oneTimeKey(cipher))
        cipher.apply(to: buffer, counter: 1)
        return Self.tag(&mac, aad: aad, ciphertext: UnsafeRawBufferPointer(buffer))
    }

    /// Checks `tag` over `aad` and the ciphertext in `buffer`, then decrypts it in place; false
    /// (and `buffer` untouched) when the tag does not match.
    package func open(_ buffer: UnsafeMutableRawBufferPointer, tag: some Collection<UInt8>, nonce: [UInt8],
                      aad: UnsafeRawBufferPointer) -> Bool {
        guard buffer.count <= Self.maxMessageCount else { return false }
        let cipher = ChaCha20(key: key, nonce: nonce)
        var mac = Poly1305(key: Self.oneTimeKey(cipher))
        let expected = Self.tag(&mac, aad: aad, ciphertext: UnsafeRawBufferPointer(buffer))
        guard Secrets.equal(expected, tag) else { return false }
        cipher.apply(to: buffer, counter: 1)
        return true
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

    /// Poly1305's one-time key: the first 32 bytes of block 0 (RFC 8439 §2.6).
    private static func oneTimeKey(_ cipher: ChaCha20) -> [UInt8] {
        cipher.apply(to: [UInt8](repeating: 0, count: 32), counter: 0)
    }

    /// aad, zeros to 16, ciphertext, zeros to 16, both lengths as 64-bit little-endian.
    private static func tag(_ mac: inout Poly1305, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer) -> [UInt8] {
        let zeros = [UInt8](repeating: 0, count: 16)
        mac.update(aad)
        mac.update(Array(zeros.prefix((16 - aad.count % 16) % 16)))
        mac.update(ciphertext)
        mac.update(Array(zeros.prefix((16 - ciphertext.count % 16) % 16)))
        var lengths = [UInt8]()
        for length in [UInt64(aad.count), UInt64(ciphertext.count)] {
            for shift in stride(from: 0, to: 64, by: 8) { lengths.append(UInt8(truncatingIfNeeded: length >> UInt64(shift))) }
        }
        mac.update(lengths)
        return mac.finalize()
    }
}
