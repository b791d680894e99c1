import SkyNetRuntime

/// The proofs and session keys of the token handshake (docs/PROTOCOL.md, "Authentication").
///
/// Everything is an HMAC-SHA256 keyed with the token over a label and the transcript: the
/// coordinator's hello line exactly as sent (it holds the coordinator's nonce) and the node's
/// nonce. So the proof and the keys are bound to both fresh nonces, and a proof or a line made
/// for one connection is worth nothing on another.
///
/// The coordinator proves it knows the token with `coordinatorProof`; the node proves it by
/// sealing its welcome with the node-to-coordinator key, which only the token yields. The
/// coordinator goes first because it only ever talks to the nodes of its cluster file, while
/// anyone can reach a node: so a stranger cannot collect proofs from a node to guess at.
package struct AuthTranscript: Sendable {
    private let bytes: [UInt8]

    /// - Parameters:
    ///   - hello: the hello line as it went over the wire, without its newline.
    ///   - nodeNonce: the nonce of the node's challenge.
    package init(hello: some Collection<UInt8>, nodeNonce: [UInt8]) {
        bytes = Array(hello) + [0x0A] + Array(Secrets.hex(nodeNonce).utf8)
    }

    /// What the coordinator sends to show it knows the token.
    package func coordinatorProof(token: HMACSHA256) -> [UInt8] { mac("skynet coordinator proof", token) }

    /// The keys of the lines after the handshake, for the side that is `role`.
    package func sessionKeys(token: HMACSHA256, as role: Role) -> SessionKeys {
        let toNode = HMACSHA256(key: mac("skynet key coordinator to node", token))
        let toCoordinator = HMACSHA256(key: mac("skynet key node to coordinator", token))
        return role == .node ? SessionKeys(sending: toCoordinator, receiving: toNode)
                             : SessionKeys(sending: toNode, receiving: toCoordinator)
    }

    package enum Role: Sendable { case node, coordinator }

    private func mac(_ label: String, _ token: HMACSHA256) -> [UInt8] {
        token.tag { hash in
            hash.update(label)
            hash.update([0x0A])
            hash.update(bytes)
        }
    }
}

/// The two keys of one authenticated session: one for the lines it sends, one for those it reads.
package struct SessionKeys: Sendable {
    package let sending: HMACSHA256
    package let receiving: HMACSHA256
}
