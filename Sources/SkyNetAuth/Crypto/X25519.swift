import SkyNetRuntime

/// X25519 Diffie-Hellman (RFC 7748 §5–6): a 32-byte private scalar, a 32-byte public u
/// coordinate, and the shared secret both sides compute. The Montgomery ladder runs all 255
/// steps whatever the scalar, swapping by mask (`FieldElement.conditionalSwap`): its time
/// and memory accesses do not depend on the secret.
package enum X25519 {
    package static let keyCount = 32
    /// The base point's u coordinate, 9.
    static let basePoint: [UInt8] = [9] + [UInt8](repeating: 0, count: 31)

    /// A new private key (32 bytes from the kernel's CSPRNG) and its public key.
    package static func keyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) {
        let privateKey = Secrets.randomBytes(keyCount)
        return (privateKey, publicKey(for: privateKey))
    }

    /// The public key of `privateKey`: the scalar times the base point.
    package static func publicKey(for privateKey: [UInt8]) -> [UInt8] {
        scalarMultiply(privateKey, basePoint)
    }

    /// The shared secret of `privateKey` and the peer's `publicKey`; nil when it is all zeros
    /// (a public key of small order, which would let the peer fix the secret: RFC 7748 §6.1).
    package static func sharedSecret(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
        let shared = scalarMultiply(privateKey, publicKey)
        let allZero = shared.reduce(UInt8(0)) { $0 | $1 } == 0
        return allZero ? nil : shared
    }

    /// The X25519 function: `scalar` (clamped here) times the point with u coordinate `u`.
    /// Both must hold 32 bytes.
    package static func scalarMultiply(_ scalar: [UInt8], _ u: [UInt8]) -> [UInt8] {
        precondition(scalar.count == keyCount && u.count == keyCount, "X25519 takes 32-byte scalars and points")
        var k = scalar
        k[0] &= 248
        k[31] &= 127
        k[31] |= 64
        let x1 = FieldElement(bytes: u)
        var x2 = FieldElement.one, z2 = FieldElement.zero
        var x3 = x1, z3 = FieldElement.one
        var swap: UInt64 = 0
        for t in stride(from: 254, through: 0, by: -1) {
            let bit = UInt64(k[t >> 3] >> UInt8(t & 7)) & 1
            swap ^= bit
            FieldElement.conditionalSwap(&x2, &x3, swap)
            FieldElement.conditionalSwap(&z2, &z3, swap)
            swap = bit
            let a = x2 + z2, aa = a.squared()
            let b = x2 - z2, bb = b.squared()
            let e = aa - bb
            let c = x3 + z3, d = x3 - z3
            let da = d * a, cb = c * b
            x3 = (da + cb).squared()
            z3 = x1 * (da - cb).squared()
            x2 = aa * bb
            z2 = e * (aa + e.times(121_665))
        }
        FieldElement.conditionalSwap(&x2, &x3, swap)
        FieldElement.conditionalSwap(&z2, &z3, swap)
        // Wipe the clamped scalar's copy rather than leave it in freed memory.
        k.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        return (x2 * z2.inverted()).bytes
    }
}
