/// What a token gives an encrypted link (docs/PROTOCOL.md, "Encrypted links"): the Noise
/// pre-shared key, and the two ends of the handshake made with it.
///
/// The token is any text of 16 bytes or more; Noise takes 32 bytes. HKDF-SHA256 (extract with
/// a fixed salt, expand with a fixed label) turns one into the other without losing what the
/// token holds, and keeps the pre-shared key apart from the dashboard's HMAC key, which is the
/// token itself.
package struct LinkKey: Sendable {
    /// The pre-shared key of `NoiseHandshake`.
    let psk: [UInt8]

    package init(token: some Collection<UInt8>) {
        psk = HKDFSHA256.derive(salt: Array("skynet token".utf8), inputKeyMaterial: Array(token),
                                info: Array("noise psk".utf8), count: 32)
    }

    /// The prologue both ends hash before the first message: the protocol and its version, so a
    /// handshake made for another protocol (or another version of this one) never completes.
    static let prologue = Array("skynet 2".utf8)

    /// The coordinator's (client's) end of a new handshake: it writes the first message.
    package func initiator() -> NoiseHandshake {
        NoiseHandshake(role: .initiator, psk: psk, prologue: Self.prologue)
    }

    /// The node's end of a new handshake: it reads the first message and answers.
    package func responder() -> NoiseHandshake {
        NoiseHandshake(role: .responder, psk: psk, prologue: Self.prologue)
    }
}
