import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// X25519 against RFC 7748's test vectors: §5.2's two scalar multiplications and the iterated
/// one (1 and 1,000 times), and §6.1's Diffie-Hellman between Alice and Bob.
@Suite(.onOwnThread) struct X25519Tests {
    private func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(fromHex: hex) ?? [] }

    @Test func section52sTwoScalarMultiplications() {
        #expect(Secrets.hex(X25519.scalarMultiply(bytes("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                                                  bytes("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")))
            == "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
        // This u has its top bit set: it is ignored.
        #expect(Secrets.hex(X25519.scalarMultiply(bytes("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d"),
                                                  bytes("e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493")))
            == "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957")
    }

    @Test func section52sIterationOnceAndAThousandTimes() {
        var k = X25519.basePoint, u = X25519.basePoint
        for round in 1...1000 {
            (k, u) = (X25519.scalarMultiply(k, u), k)
            if round == 1 { #expect(Secrets.hex(k) == "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079") }
        }
        #expect(Secrets.hex(k) == "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
    }

    @Test func section61sDiffieHellman() {
        let alice = bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        let bob = bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
        let alicePublic = X25519.publicKey(for: alice), bobPublic = X25519.publicKey(for: bob)
        #expect(Secrets.hex(alicePublic) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(Secrets.hex(bobPublic) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(X25519.sharedSecret(privateKey: alice, publicKey: bobPublic).map(Secrets.hex) == shared)
        #expect(X25519.sharedSecret(privateKey: bob, publicKey: alicePublic).map(Secrets.hex) == shared)
    }

    /// A public key of small order (0, 1, and the order-8 point of RFC 7748 §6.1's warning)
    /// gives an all-zero secret: refused.
    @Test func aSmallOrderPublicKeyIsRefused() {
        let (privateKey, _) = X25519.keyPair()
        let zero = [UInt8](repeating: 0, count: 32), one = [1] + [UInt8](repeating: 0, count: 31)
        let orderEight = bytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")
        for point in [zero, one, orderEight] {
            #expect(X25519.sharedSecret(privateKey: privateKey, publicKey: point) == nil, "\(Secrets.hex(point))")
        }
    }

    /// Two fresh key pairs agree on their secret.
    @Test func freshKeyPairsAgree() {
        let (a, aPublic) = X25519.keyPair(), (b, bPublic) = X25519.keyPair()
        let one = X25519.sharedSecret(privateKey: a, publicKey: bPublic)
        #expect(one != nil)
        #expect(one == X25519.sharedSecret(privateKey: b, publicKey: aPublic))
    }
}
