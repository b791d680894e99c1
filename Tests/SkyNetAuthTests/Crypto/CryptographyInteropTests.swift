import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// Our ChaCha20-Poly1305, Poly1305, X25519 and HKDF-SHA256 against an independent
/// implementation, Debian's `python3-cryptography` (OpenSSL underneath), on seeded random
/// cases: the same keys give the same bytes both ways; what one seals the other opens; the
/// two sides of a key exchange agree. A missing `python3-cryptography` fails with that reason.
@Suite(.onOwnThread) struct CryptographyInteropTests {
    /// What Python computes for each case line (hex fields; one JSON object per line).
    static let oracle = #"""
    import json, sys
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    from cryptography.hazmat.primitives.poly1305 import Poly1305
    from cryptography.hazmat.primitives import hashes, serialization
    h = bytes.fromhex
    raw = (serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    for line in open(sys.argv[1]):
        c = json.loads(line)
        out = {}
        if c["kind"] == "aead":
            aead = ChaCha20Poly1305(h(c["key"]))
            out["sealed"] = aead.encrypt(h(c["nonce"]), h(c["message"]), h(c["aad"])).hex()
            out["opened"] = aead.decrypt(h(c["nonce"]), h(c["ours"]), h(c["aad"])).hex()
            try:
                aead.decrypt(h(c["nonce"]), h(c["tampered"]), h(c["aad"]))
                out["tamperedOpened"] = True
            except Exception:
                out["tamperedOpened"] = False
        elif c["kind"] == "poly1305":
            out["tag"] = Poly1305.generate_tag(h(c["key"]), h(c["message"])).hex()
        elif c["kind"] == "x25519":
            ours = X25519PrivateKey.from_private_bytes(h(c["private"]))
            out["public"] = ours.public_key().public_bytes(*raw).hex()
            theirs = X25519PrivateKey.generate()
            out["theirPublic"] = theirs.public_key().public_bytes(*raw).hex()
            out["shared"] = theirs.exchange(X25519PublicKey.from_public_bytes(h(c["ourPublic"]))).hex()
        elif c["kind"] == "hkdf":
            hkdf = HKDF(hashes.SHA256(), c["count"], h(c["salt"]) or None, h(c["info"]))
            out["okm"] = hkdf.derive(h(c["ikm"])).hex()
        print(json.dumps(out))
    """#

    private func hex(_ bytes: [UInt8]) -> String { Secrets.hex(bytes) }
    private func bytes(_ value: Any?) -> [UInt8] { Secrets.bytes(fromHex: value as? String ?? "") ?? [] }

    @Test func ourPrimitivesAndPythonCryptographyAgree() async throws {
        var random = SeededRandom(seed: 8439)
        var cases: [[String: Any]] = []
        var aeads: [(key: [UInt8], nonce: [UInt8], aad: [UInt8], message: [UInt8])] = []
        for index in 0..<60 {
            // Lengths on either side of ChaCha20's 64-byte block, its groups of 4, 8 and 16
            // blocks and Poly1305's 16, then random.
            let chosen = [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 255, 256, 257, 319, 511, 512, 513, 1000, 1024, 1985, 4099]
            let length = index < chosen.count ? chosen[index] : Int(random.next() % 700)
            let key = randomBytes(32, using: &random), nonce = randomBytes(12, using: &random)
            let aad = randomBytes(Int(random.next() % 40), using: &random), message = randomBytes(length, using: &random)
            let aead = ChaCha20Poly1305(key: key)
            let ours = aead.seal(message, nonce: nonce, aad: aad)
            var tampered = ours
            tampered[Int(random.next() % UInt64(tampered.count))] ^= 0x40
            aeads.append((key, nonce, aad, message))
            cases.append(["kind": "aead", "key": hex(key), "nonce": hex(nonce), "aad": hex(aad), "message": hex(message),
                          "ours": hex(ours), "tampered": hex(tampered)])
            cases.append(["kind": "poly1305", "key": hex(randomBytes(32, using: &random)), "message": hex(message)])
        }
        // Poly1305's largest products and carries: all-ones keys (r as clamped as allowed) and messages.
        for length in [16, 17, 64, 1000] {
            cases.append(["kind": "poly1305", "key": hex([UInt8](repeating: 0xff, count: 32)),
                          "message": hex([UInt8](repeating: 0xff, count: length))])
        }
        var privates: [[UInt8]] = []
        for _ in 0..<20 {
            let privateKey = randomBytes(32, using: &random)
            privates.append(privateKey)
            cases.append(["kind": "x25519", "private": hex(privateKey), "ourPublic": hex(X25519.publicKey(for: privateKey))])
        }
        for _ in 0..<20 {
            cases.append(["kind": "hkdf", "salt": hex(randomBytes(Int(random.next() % 80), using: &random)),
                          "ikm": hex(randomBytes(Int(random.next() % 80) + 1, using: &random)),
                          "info": hex(randomBytes(Int(random.next() % 40), using: &random)), "count": Int(random.next() % 200) + 1])
        }
        let directory = try TemporaryDirectory()
        let lines = try cases.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        let file = try directory.write(Array(lines.joined(separator: "\n").utf8), named: "cases.jsonl")
        let script = try directory.write(Array(Self.oracle.utf8), named: "oracle.py")
        // Debian's python3 and its python3-cryptography, whatever python3 comes first in PATH.
        let output = try await toolOutput("/usr/bin/python3", [script, file])
        let answers = try output.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        try #require(answers.count == cases.count, "python answered \(answers.count) of \(cases.count) cases: \(output.prefix(500))")
        var aeadIndex = 0, x25519Index = 0, agreed = 0
        for (question, answer) in zip(cases, answers) {
            switch question["kind"] as? String {
            case "aead":
                let (key, nonce, aad, message) = aeads[aeadIndex]
                aeadIndex += 1
                let aead = ChaCha20Poly1305(key: key)
                #expect(answer["sealed"] as? String == question["ours"] as? String, "sealed \(message.count) bytes")
                #expect(bytes(answer["opened"]) == message, "python opened ours")
                #expect(aead.open(bytes(answer["sealed"]), nonce: nonce, aad: aad) == message, "we opened python's")
                #expect(answer["tamperedOpened"] as? Bool == false)
                #expect(aead.open(bytes(question["tampered"]), nonce: nonce, aad: aad) == nil)
            case "poly1305":
                #expect(answer["tag"] as? String == hex(Poly1305.tag(bytes(question["message"]), key: bytes(question["key"]))))
            case "x25519":
                let privateKey = privates[x25519Index]
                x25519Index += 1
                #expect(answer["public"] as? String == question["ourPublic"] as? String)
                let shared = X25519.sharedSecret(privateKey: privateKey, publicKey: bytes(answer["theirPublic"]))
                #expect(shared.map(hex) == answer["shared"] as? String, "the two sides of the exchange disagree")
            default:
                let count = question["count"] as? Int ?? 0
                let ours = HKDFSHA256.derive(salt: bytes(question["salt"]), inputKeyMaterial: bytes(question["ikm"]),
                                             info: bytes(question["info"]), count: count)
                #expect(answer["okm"] as? String == hex(ours), "HKDF of \(count) bytes")
            }
            agreed += 1
        }
        #expect(agreed == 164)
    }
}
