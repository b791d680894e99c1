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

    /// The nonce of message `counter`.
    static func nonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> UInt64(8 * $0)) }
    }

    /// Encrypts `plaintext` as the next message: ciphertext then tag (16 bytes more).
    package mutating func seal(_ plaintext: [UInt8], ad: [UInt8] = []) -> [UInt8] {
        let nonce = nextNonce()
        return aead.seal(plaintext, nonce: nonce, aad: ad)
    }

    /// Decrypts the next message; nil when its tag does not match (it was changed, replayed,
    /// reordered or another message was lost before it). The counter moves only on success.
    package mutating func open(_ message: [UInt8], ad: [UInt8] = []) -> [UInt8]? {
        guard counter < .max, let plaintext = aead.open(message, nonce: Self.nonce(counter), aad: ad) else { return nil }
        counter += 1
        return plaintext
    }

    /// `seal` in place, with no additional data: `buffer` becomes the ciphertext, `tag` (16
    /// bytes) its tag. Nothing is allocated.
    package mutating func seal(_ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer) {
        precondition(counter < .max, "a Noise cipher's nonces are spent")
        aead.seal(buffer, nonce: Self.words(counter), aad: UnsafeRawBufferPointer(start: nil, count: 0), tag: tag)
        counter += 1
    }

    /// `open` in place, with no additional data: false, and `buffer` untouched, when `tag` does
    /// not match.
    package mutating func open(_ buffer: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer) -> Bool {
        guard counter < .max, aead.open(buffer, tag: tag, nonce: Self.words(counter), aad: UnsafeRawBufferPointer(start: nil, count: 0)) else {
            return false
        }
        counter += 1
        return true
    }

    /// The nonce of message `counter` as ChaCha20's words: zero, then the counter's halves.
    private static func words(_ counter: UInt64) -> ChaCha20Poly1305.Nonce {
        (0, UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32))
    }

    private mutating func nextNonce() -> [UInt8] {
        // 2^64 − 1 is reserved (§5.1); a link never sends that many messages.
        precondition(counter < .max, "a Noise cipher's nonces are spent")
        defer { counter += 1 }
        return Self.nonce(counter)
    }
}
