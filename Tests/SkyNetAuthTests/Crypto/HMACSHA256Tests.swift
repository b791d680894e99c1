import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// HMAC-SHA256 against RFC 4231's test cases and `openssl dgst` over seeded random keys and
/// messages.
@Suite(.onOwnThread) struct HMACSHA256Tests {
    private func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(fromHex: hex) ?? [] }
    private func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }
    private func tag(_ key: [UInt8], _ message: [UInt8]) -> String { Secrets.hex(HMACSHA256(key: key).tag(message)) }

    @Test func rfc4231CasesOneToFourGiveTheirTags() {
        #expect(tag(repeated(0x0b, 20), Array("Hi There".utf8))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(tag(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(tag(repeated(0xaa, 20), repeated(0xdd, 50))
            == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        #expect(tag(bytes("0102030405060708090a0b0c0d0e0f10111213141516171819"), repeated(0xcd, 50))
            == "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b")
    }

    @Test func rfc4231CaseFiveTruncatedTo128Bits() {
        let full = HMACSHA256(key: repeated(0x0c, 20)).tag(Array("Test With Truncation".utf8))
        #expect(full.count == HMACSHA256.tagCount)
        #expect(Secrets.hex(full.prefix(16)) == "a3b6167473100ee06e0c796c2955552b")
    }

    /// A 131-byte key is longer than a block: it is hashed first.
    @Test func rfc4231CasesSixAndSevenHashALongKeyFirst() {
        let key = repeated(0xaa, 131)
        #expect(tag(key, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        let message = "This is a test using a larger than block-size key and a larger than block-size data."
            + " The key needs to be hashed before being used by the HMAC algorithm."
        #expect(tag(key, Array(message.utf8)) == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
    }

    @Test func aMessageFedInPartsHasTheTagOfTheWhole() {
        let mac = HMACSHA256(key: Array("a token of at least sixteen bytes".utf8))
        let sequence: UInt64 = 0x0102_0304_0506_0708
        let line = Array(#"{"type":"result","id":7}"#.utf8)
        let parts = mac.tag { hasher in
            withUnsafeBytes(of: sequence.bigEndian) { hasher.update($0) }
            hasher.update(line)
        }
        #expect(parts == mac.tag([1, 2, 3, 4, 5, 6, 7, 8] + line))
        // The key states are reused, never spent: the same message gives the same tag again.
        #expect(mac.tag(line) == mac.tag(line))
        #expect(mac.tag(line) != mac.tag(line + [0x0a]))

        var buffer = [UInt8](repeating: 0, count: HMACSHA256.tagCount)
        buffer.withUnsafeMutableBytes { out in mac.tag(into: out.baseAddress.unsafelyUnwrapped) { $0.update(line) } }
        #expect(buffer == mac.tag(line))
    }

    /// 40 seeded random keys of 0…200 bytes (across the 64-byte block) with messages of 0…300
    /// bytes, against `openssl dgst`. A missing `openssl` fails the test with that reason.
    @Test func randomKeysAndMessagesTagAsOpensslTagsThem() async throws {
        var random = SeededRandom(seed: 2104)
        let directory = try TemporaryDirectory()
        for index in 0..<40 {
            // Both ends of the key range and either side of the block on purpose, then random.
            let chosen = [0, 200, 63, 64, 65]
            let keyCount = index < chosen.count ? chosen[index] : Int(random.next() % 201)
            let key = randomBytes(keyCount, using: &random)
            let message = randomBytes(Int(random.next() % 301), using: &random)
            let file = try directory.write(message, named: "message-\(index)")
            // openssl refuses an empty hexkey; one zero byte is the same HMAC key (keys are
            // padded with zeros to the block).
            let hexKey = key.isEmpty ? "00" : Secrets.hex(key)
            let output = try await toolOutput("openssl", ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hexKey)", "-r", file])
            #expect(Secrets.hex(HMACSHA256(key: key).tag(message)) == String(output.prefix(64)),
                    "key \(key.count) bytes, message \(message.count) bytes")
        }
    }
}
