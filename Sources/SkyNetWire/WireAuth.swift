
/// The token handshake as its messages carry it (docs/PROTOCOL.md, "Encrypted links"): wire
/// facts, kept with the messages so that they are read and written without the cryptography
/// (SkyNetAuth).
package enum WireAuth {
    /// The protocol version whose hello may carry the Noise handshake of an encrypted link. A
    /// node with a token serves no other: a token link is always encrypted.
    package static let encryptedVersion = 2
    /// The most bytes a handshake message (`noise`) may hold once decoded: an ephemeral key
    /// (32), a tag (16) and a payload (a hello or a welcome, whose jobs may be many).
    package static let maxNoiseBytes = 256 << 10
    /// The fewest: an ephemeral key and the tag of an empty payload.
    package static let minNoiseBytes = 48
}
