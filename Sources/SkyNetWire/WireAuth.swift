
/// The token handshake as its messages carry it (docs/PROTOCOL.md, "Authentication"): the
/// scheme a hello names and the sizes of a nonce and a proof. Wire facts, kept with the
/// messages so that they are read and written without the cryptography (SkyNetAuth).
public enum WireAuth {
    /// The scheme a hello names in its `auth` field.
    public static let scheme = "hmac-sha256"
    /// Bytes of each side's nonce.
    public static let nonceCount = 32
    /// Bytes of the coordinator's proof (an HMAC-SHA256 tag).
    public static let proofCount = 32
}
