
/// The token handshake as its messages carry it (docs/PROTOCOL.md, "Authentication"): the
/// scheme a hello names and the sizes of a nonce and a proof. Wire facts, kept with the
/// messages so that they are read and written without the cryptography (SkyNetAuth).
package enum WireAuth {
    /// The scheme a hello names in its `auth` field.
    package static let scheme = "hmac-sha256"
    /// Bytes of each side's nonce.
    package static let nonceCount = 32
    /// Bytes of the coordinator's proof (an HMAC-SHA256 tag).
    package static let proofCount = 32
}
