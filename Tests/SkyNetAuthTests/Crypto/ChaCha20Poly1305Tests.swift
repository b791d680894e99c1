import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// ChaCha20, Poly1305 and their AEAD against RFC 8439's test vectors (§2.3.2, §2.4.2, §2.5.2,
/// §2.8.2), and the AEAD's refusals: a changed byte anywhere, another nonce, other data.
@Suite(.onOwnThread) struct ChaCha20Poly1305Tests {
    private func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(fromHex: hex.filter { !" :\n".contains($0) }) ?? [] }
    private let sunscreen = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)

    @Test func theBlockFunctionGivesSection232sBlock() {
        let cipher = ChaCha20(key: (0..<32).map { UInt8($0) }, nonce: bytes("000000090000004a00000000"))
        let block = cipher.apply(to: [UInt8](repeating: 0, count: 64), counter: 1)
        #expect(Secrets.hex(block) == "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            + "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    }

    @Test func encryptionGivesSection242sCiphertextAndDecryptsBack() {
        let cipher = ChaCha20(key: (0..<32).map { UInt8($0) }, nonce: bytes("000000000000004a00000000"))
        let encrypted = cipher.apply(to: sunscreen, counter: 1)
        #expect(encrypted == bytes("""
            6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0bf91b65c5524733ab8f593dabcd62b357
            1639d624e65152ab8f530c359f0861d807ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736
            5af90bbf74a35be6b40b8eedf2785e42874d
            """))
        #expect(cipher.apply(to: encrypted, counter: 1) == sunscreen)
    }

    @Test func poly1305GivesSection252sTag() {
        let key = bytes("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b")
        #expect(Secrets.hex(Poly1305.tag(Array("Cryptographic Forum Research Group".utf8), key: key)) == "a8061dc1305136c6c22b8baf0c0127a9")
    }

    /// Fed in pieces of every size, Poly1305 gives the tag of the whole.
    @Test func poly1305FedInPiecesGivesTheWholesTag() {
        let key = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        let message = (0..<200).map { UInt8(truncatingIfNeeded: $0 * 13 + 1) }
        let whole = Poly1305.tag(message, key: key)
        for piece in 1...33 {
            var mac = Poly1305(key: key)
            for start in stride(from: 0, to: message.count, by: piece) { mac.update(Array(message[start..<min(message.count, start + piece)])) }
            #expect(mac.finalize() == whole, "pieces of \(piece)")
        }
    }

    @Test func theAEADGivesSection282sCiphertextAndTagAndOpensThem() {
        let aead = ChaCha20Poly1305(key: (0x80..<0xa0).map { UInt8($0) })
        let nonce = bytes("070000004041424344454647"), aad = bytes("50515253c0c1c2c3c4c5c6c7")
        let sealed = aead.seal(sunscreen, nonce: nonce, aad: aad)
        #expect(sealed == bytes("""
            d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b
            1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc
            3ff4def08e4b7a9de576d26586cec64b6116
            1ae10b594f09e26a7e902ecbd0600691
            """))
        #expect(aead.open(sealed, nonce: nonce, aad: aad) == sunscreen)
    }

    /// Every single flipped bit of the ciphertext or tag, another nonce, other data, a cut
    /// message: each is refused.
    @Test func theAEADRefusesAnyChange() {
        let aead = ChaCha20Poly1305(key: (0..<32).map { UInt8($0 ^ 0x5a) })
        let nonce = [UInt8](repeating: 1, count: 12), aad = Array("header".utf8)
        let sealed = aead.seal(Array("a message of some length, over one block".utf8), nonce: nonce, aad: aad)
        for index in sealed.indices {
            for bit in 0..<8 {
                var changed = sealed
                changed[index] ^= 1 << bit
                #expect(aead.open(changed, nonce: nonce, aad: aad) == nil, "byte \(index) bit \(bit)")
            }
        }
        #expect(aead.open(sealed, nonce: [UInt8](repeating: 2, count: 12), aad: aad) == nil)
        #expect(aead.open(sealed, nonce: nonce, aad: Array("headex".utf8)) == nil)
        #expect(aead.open(Array(sealed.dropLast()), nonce: nonce, aad: aad) == nil)
        #expect(aead.open(Array(sealed.prefix(15)), nonce: nonce, aad: aad) == nil)
        #expect(aead.open(sealed, nonce: nonce, aad: aad) != nil)
    }

    /// An empty message seals to its tag alone, and opens.
    @Test func anEmptyMessageIsItsTagAlone() {
        let aead = ChaCha20Poly1305(key: [UInt8](repeating: 9, count: 32))
        let sealed = aead.seal([], nonce: [UInt8](repeating: 0, count: 12))
        #expect(sealed.count == 16)
        #expect(aead.open(sealed, nonce: [UInt8](repeating: 0, count: 12)) == [])
    }
}

/// HKDF-SHA256 against RFC 5869's test cases 1 and 3 (salt and info; neither).
@Suite struct HKDFSHA256Tests {
    private func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(fromHex: hex) ?? [] }

    @Test func rfc5869CaseOne() {
        let prk = HKDFSHA256.extract(salt: bytes("000102030405060708090a0b0c"), inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22))
        #expect(Secrets.hex(prk) == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
        let okm = HKDFSHA256.expand(pseudorandomKey: prk, info: bytes("f0f1f2f3f4f5f6f7f8f9"), count: 42)
        #expect(Secrets.hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test func rfc5869CaseThreeWithNoSaltAndNoInfo() {
        let prk = HKDFSHA256.extract(salt: [], inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22))
        #expect(Secrets.hex(prk) == "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04")
        let okm = HKDFSHA256.derive(salt: [], inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), info: [], count: 42)
        #expect(Secrets.hex(okm) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }
}
