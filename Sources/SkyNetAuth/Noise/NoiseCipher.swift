/// One direction of a Noise session after its handshake (the Noise Protocol Framework,
/// revision 34, §5.1 CipherState, with ChaChaPoly): ChaCha20-Poly1305 under one key, the
/// nonce a counter that goes up by one per message (32 zero bits, then the counter as 64-bit
/// little-endian). Both ends count, so a message replayed, reordered, dropped or cut fails
/// its tag on the other side: the counter never goes back.
package struct NoiseCipher: Sendable {
    private let aead: ChaCha20Poly1305
    /// The next message's nonce.
    package private(set) var counter: UInt64 = 0

    package init(key: [UInt8]) {
        aead = ChaCha20Poly1305(key: key)
    }

    /// Encrypts `plaintext` as the next message: ciphertext then tag (16 bytes more).
    package mutating func seal(_ plaintext: [UInt8], ad: [UInt8] = []) -> [UInt8] {
        var sealed = plaintext + [UInt8](repeating: 0, count: ChaCha20Poly1305.tagCount)
        let count = plaintext.count
        sealed.withUnsafeMutableBytes { bytes in
            ad.withUnsafeBytes { seal(UnsafeMutableRawBufferPointer(rebasing: bytes[..<count]), ad: $0,
                                      tag: UnsafeMutableRawBufferPointer(rebasing: bytes[count...])) }
        }
        return sealed
    }

    /// Decrypts the next message; nil when its tag does not match (it was changed, replayed,
    /// reordered or another message was lost before it). The counter moves only on success.
    package mutating func open(_ message: [UInt8], ad: [UInt8] = []) -> [UInt8]? {
        guard message.count >= ChaCha20Poly1305.tagCount else { return nil }
        let count = message.count - ChaCha20Poly1305.tagCount
        var plaintext = Array(message.prefix(count))
        let opened = plaintext.withUnsafeMutableBytes { buffer in
            message.withUnsafeBytes { sealed in
                ad.withUnsafeBytes { open(buffer, ad: $0, tag: UnsafeRawBufferPointer(rebasing: sealed[count...])) }
            }
        }
        return opened ? plaintext : nil
    }

    /// `seal` in place, with no additional data: `buffer` becomes the ciphertext, `tag` (16
    /// bytes) its tag. Nothing is allocated.
    package mutating func seal(_ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer) {
        seal(buffer, ad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
    }

    /// `open` in place, with no additional data: false, and `buffer` untouched, when `tag` does
    /// not match.
    package mutating func open(_ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer) -> Bool {
        open(buffer, ad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
    }

    private mutating func seal(_ buffer: UnsafeMutableRawBufferPointer, ad: UnsafeRawBufferPointer, tag: UnsafeMutableRawBufferPointer) {
        // 2^64 − 1 is reserved (§5.1); a link never sends that many messages.
        precondition(counter < .max, "a Noise cipher's nonces are spent")
        aead.seal(buffer, nonce: Self.nonce(counter), aad: ad, tag: tag)
        counter += 1
    }

    private mutating func open(_ buffer: UnsafeMutableRawBufferPointer, ad: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer) -> Bool {
        guard counter < .max, aead.open(buffer, tag: tag, nonce: Self.nonce(counter), aad: ad) else { return false }
        counter += 1
        return true
    }

    /// The nonce of message `counter` as ChaCha20's words: zero, then the counter's halves.
    private static func nonce(_ counter: UInt64) -> ChaCha20Poly1305.Nonce {
        (0, UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32))
    }
}
