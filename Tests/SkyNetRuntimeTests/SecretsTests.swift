import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// Constant-time comparison, random bytes from the kernel, and hex.
@Suite struct SecretsTests {
    @Test func equalComparesWholeByteStrings() {
        let token = Array("0123456789abcdef-token".utf8)
        #expect(Secrets.equal(token, token))
        #expect(Secrets.equal([UInt8](), [UInt8]()))
        #expect(Secrets.equal(token, token[...]))
        var lastDiffers = token
        lastDiffers[lastDiffers.count - 1] ^= 0x01
        #expect(!Secrets.equal(token, lastDiffers))
        var firstDiffers = token
        firstDiffers[0] ^= 0x80
        #expect(!Secrets.equal(token, firstDiffers))
        #expect(!Secrets.equal(token, token.dropLast()))
        #expect(!Secrets.equal(token.dropLast(), token))
        #expect(!Secrets.equal(token, token + [0]))
        #expect(!Secrets.equal([UInt8](), [0]))
    }

    @Test func randomBytesAreFreshAndOfTheAskedLength() {
        let first = Secrets.randomBytes(32), second = Secrets.randomBytes(32)
        #expect(first.count == 32 && second.count == 32)
        #expect(first != second)
        #expect(Secrets.randomBytes(7).count == 7)
        #expect(Secrets.randomBytes(0).isEmpty)
        #expect(Secrets.randomBytes(-1).isEmpty)
        // Every byte is drawn, none left at zero or copied: in 8192 bytes each of the 256
        // values shows up (missing one by chance: about 3 in 10^12) and none more than 100
        // times (32 expected, 100 is twelve standard deviations away).
        let many = Secrets.randomBytes(8192)
        let counts = Dictionary(many.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts.count == 256)
        #expect(counts.values.max() ?? 0 <= 100)
    }

    @Test func hexIsLowercaseAndRoundTrips() {
        #expect(Secrets.hex([0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]) == "00017f80abff")
        #expect(Secrets.hex([UInt8]()) == "")
        #expect(Secrets.hex([UInt8](0...255)).count == 512)
        var random = SeededRandom(seed: 16)
        for _ in 0..<200 {
            let bytes = randomBytes(Int(random.next() % 100), using: &random)
            let text = Secrets.hex(bytes)
            #expect(text.count == bytes.count * 2)
            #expect(text == text.lowercased())
            #expect(Secrets.bytes(fromHex: text) == bytes)
        }
    }

    @Test func fromHexAcceptsEitherCaseAndRefusesAnythingElse() {
        #expect(Secrets.bytes(fromHex: "00FFaB10") == [0x00, 0xff, 0xab, 0x10])
        #expect(Secrets.bytes(fromHex: "ABCDEF") == Secrets.bytes(fromHex: "abcdef"))
        #expect(Secrets.bytes(fromHex: "") == [])
        #expect(Secrets.bytes(fromHex: "abc") == nil)
        #expect(Secrets.bytes(fromHex: "0g") == nil)
        #expect(Secrets.bytes(fromHex: "g0") == nil)
        // The characters just outside each range of digits: / : @ G ` g
        for outside in ["/0", "0:", "@0", "0G", "`0", "0g"] {
            #expect(Secrets.bytes(fromHex: outside) == nil, "\(outside)")
        }
        #expect(Secrets.bytes(fromHex: "0 ") == nil)
        #expect(Secrets.bytes(fromHex: "-1") == nil)
        #expect(Secrets.bytes(fromHex: "é0") == nil)  // three UTF-8 bytes, two of them not hex
        #expect(Secrets.bytes(fromHex: "éé") == nil)
        #expect(Secrets.bytes(fromHex: "0a0b"[...]) == [0x0a, 0x0b])
    }
}
