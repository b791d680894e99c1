/// The Noise handshake `NNpsk0` with X25519, ChaCha20-Poly1305 and SHA-256 (the Noise Protocol
/// Framework, revision 34; its name is `protocolName`):
///
///     -> psk, e
///     <- e, ee
///
/// Each side sends a fresh ephemeral key; the shared secret of the two (`ee`) gives forward
/// secrecy: a recorded session cannot be read later by someone who learns the pre-shared key.
/// The pre-shared key is mixed in before anything is sent (`psk0`), so only a peer that holds
/// it can produce or read either message's payload; it never travels. A wrong key shows only
/// as a message that does not open: nothing in it tells how the key differs.
///
/// Use: the initiator `writeMessage`s, the responder `readMessage`s it and `writeMessage`s its
/// answer, the initiator `readMessage`s that; then both `split()`. Each message may carry a
/// payload, encrypted (the first under a key from the pre-shared key alone, so without
/// forward secrecy: keep it to what a hello says).
package struct NoiseHandshake: Sendable {
    package enum Role: Sendable { case initiator, responder }

    package static let protocolName = "Noise_NNpsk0_25519_ChaChaPoly_SHA256"
    /// An ephemeral public key, and a payload's tag.
    static let keyCount = 32, tagCount = 16

    /// Why a handshake message was refused.
    package enum Failure: Error, Equatable, Sendable {
        /// Shorter than a key and a tag.
        case tooShort
        /// The payload did not open: the peer holds another pre-shared key, or the message was
        /// changed.
        case refused
        /// The peer's ephemeral key is of small order (no shared secret).
        case weakKey
        /// Called out of turn (a bug in the caller).
        case outOfTurn
    }

    let role: Role
    private var chainingKey: [UInt8]
    private var hash: [UInt8]
    private var cipher: NoiseCipher?
    private let ephemeral: (privateKey: [UInt8], publicKey: [UInt8])
    private var remoteEphemeral: [UInt8]?
    private let psk: [UInt8]
    /// Messages written and read so far (0, 1 or 2).
    private var messages = 0

    /// `psk` holds 32 bytes; `prologue` is data both sides must agree on (it is hashed, never
    /// sent). `ephemeral` is for tests that need fixed keys; by default it is fresh.
    package init(role: Role, psk: [UInt8], prologue: [UInt8],
                 ephemeral: (privateKey: [UInt8], publicKey: [UInt8]) = X25519.keyPair()) {
        precondition(psk.count == 32, "a Noise pre-shared key holds 32 bytes")
        self.role = role
        self.psk = psk
        self.ephemeral = ephemeral
        // The name is longer than a hash: it is hashed (§5.2 InitializeSymmetric).
        hash = SHA256.hash(Array(Self.protocolName.utf8))
        chainingKey = hash
        mixHash(prologue)
    }

    /// Whether both messages have gone (`split` may be called).
    package var isComplete: Bool { messages == 2 }

    /// The handshake hash: both sides hold the same once complete (a channel binding).
    package var handshakeHash: [UInt8] { hash }

    /// The next message of this side, carrying `payload` encrypted. Nothing changes when it
    /// throws.
    package mutating func writeMessage(payload: [UInt8] = []) throws(Failure) -> [UInt8] {
        var next = self
        let message = try next.write(payload)
        self = next
        return message
    }

    /// Reads the peer's next message; its payload. Nothing changes when it throws: a refused
    /// message leaves the handshake where it was.
    package mutating func readMessage(_ message: [UInt8]) throws(Failure) -> [UInt8] {
        var next = self
        let payload = try next.read(message)
        self = next
        return payload
    }

    private mutating func write(_ payload: [UInt8]) throws(Failure) -> [UInt8] {
        guard (role == .initiator && messages == 0) || (role == .responder && messages == 1) else { throw .outOfTurn }
        if messages == 0 { mixKeyAndHash(psk) }
        var message = ephemeral.publicKey
        mixHash(ephemeral.publicKey)
        mixKey(ephemeral.publicKey)  // psk handshakes mix e into the key too (§9.2)
        if messages == 1 { try mixSharedSecret() }
        message += encryptAndHash(payload)
        messages += 1
        return message
    }

    private mutating func read(_ message: [UInt8]) throws(Failure) -> [UInt8] {
        guard (role == .responder && messages == 0) || (role == .initiator && messages == 1) else { throw .outOfTurn }
        guard message.count >= Self.keyCount + Self.tagCount else { throw .tooShort }
        if messages == 0 { mixKeyAndHash(psk) }
        let remote = Array(message.prefix(Self.keyCount))
        remoteEphemeral = remote
        mixHash(remote)
        mixKey(remote)
        if messages == 1 { try mixSharedSecret() }
        guard let payload = decryptAndHash(Array(message.dropFirst(Self.keyCount))) else { throw .refused }
        messages += 1
        return payload
    }

    /// The two directions' ciphers: (this side sends with, this side receives with).
    package func split() throws(Failure) -> (send: NoiseCipher, receive: NoiseCipher) {
        guard isComplete else { throw .outOfTurn }
        let keys = HKDFSHA256.derive(salt: chainingKey, inputKeyMaterial: [], info: [], count: 64)
        let first = NoiseCipher(key: Array(keys.prefix(32))), second = NoiseCipher(key: Array(keys.suffix(32)))
        return role == .initiator ? (first, second) : (second, first)
    }

    // MARK: The symmetric state (§5.2)

    private mutating func mixHash(_ data: [UInt8]) {
        hash = SHA256.hash(hash + data)
    }

    private mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let output = HKDFSHA256.derive(salt: chainingKey, inputKeyMaterial: inputKeyMaterial, info: [], count: 64)
        chainingKey = Array(output.prefix(32))
        cipher = NoiseCipher(key: Array(output.suffix(32)))
    }

    private mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let output = HKDFSHA256.derive(salt: chainingKey, inputKeyMaterial: inputKeyMaterial, info: [], count: 96)
        chainingKey = Array(output[0..<32])
        mixHash(Array(output[32..<64]))
        cipher = NoiseCipher(key: Array(output[64..<96]))
    }

    /// ee: the two ephemeral keys' shared secret.
    private mutating func mixSharedSecret() throws(Failure) {
        guard let remoteEphemeral,
              let shared = X25519.sharedSecret(privateKey: ephemeral.privateKey, publicKey: remoteEphemeral) else { throw .weakKey }
        mixKey(shared)
    }

    /// Without a key the payload goes as it is (§5.2); psk0 sets one before the first message.
    private mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        guard var cipher else {
            mixHash(plaintext)
            return plaintext
        }
        let ciphertext = cipher.seal(plaintext, ad: hash)
        self.cipher = cipher
        mixHash(ciphertext)
        return ciphertext
    }

    private mutating func decryptAndHash(_ ciphertext: [UInt8]) -> [UInt8]? {
        guard var cipher else {
            mixHash(ciphertext)
            return ciphertext
        }
        guard let plaintext = cipher.open(ciphertext, ad: hash) else { return nil }
        self.cipher = cipher
        mixHash(ciphertext)
        return plaintext
    }
}
