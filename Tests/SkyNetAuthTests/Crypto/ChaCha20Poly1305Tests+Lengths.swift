import SkyNetTestSupport
import Testing
@testable import SkyNetAuth
@testable import SkyNetRuntime

/// ChaCha20's many-block path and Poly1305's 64-bit limbs against plain references, over every
/// length where a path changes (groups of 16, 8 and 4 blocks, 64-byte blocks, 16-byte
/// Poly1305 blocks), at any alignment, fed in any pieces, and at the carries' extremes.
@Suite(.onOwnThread) struct ChaCha20Poly1305LengthTests {
    /// `message` XORed with the key stream one block at a time (`keyStream`, the scalar
    /// block function that RFC 8439 §2.3.2's vector checks).
    private func oneBlockAtATime(_ cipher: ChaCha20, _ message: [UInt8], counter: UInt32) -> [UInt8] {
        var out = message
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { block in
            let stream = UnsafeRawBufferPointer(block)
            for index in 0..<(message.count + 63) / 64 {
                cipher.keyStream(counter: counter &+ UInt32(index), into: block)
                for at in index * 64..<min(message.count, index * 64 + 64) { out[at] ^= stream[at - index * 64] }
            }
        }
        return out
    }

    /// Every length 0…600, then lengths through 2,200 (every mix of 16-, 8- and 4-block groups
    /// and single blocks), from counters that put the groups' edges anywhere (and one near the
    /// top of the counter's range), as one block at a time gives. The many-block path is asked
    /// for: a debug build would otherwise not take it.
    @Test func chaCha20OverEveryLengthGivesWhatOneBlockAtATimeGives() {
        var random = SeededRandom(seed: 8439_23)
        let cipher = ChaCha20(key: randomBytes(32, using: &random), nonce: randomBytes(12, using: &random))
        let lengths = Array(0...600) + Array(stride(from: 601, through: 2_200, by: 7)) + [1_023, 1_024, 1_025, 1_535, 1_536, 1_792, 1_983, 1_984, 2_047, 2_048]
        for counter: UInt32 in [0, 3, 13, 0xffff_ff00] {
            var wrong: [Int] = []
            for length in lengths {
                let message = randomBytes(length, using: &random)
                var out = message
                out.withUnsafeMutableBytes { cipher.apply(to: $0, counter: counter, manyBlocks: true) }
                if out != oneBlockAtATime(cipher, message, counter: counter) { wrong.append(length) }
            }
            #expect(wrong.isEmpty, "counter \(counter): lengths \(wrong.prefix(20))")
        }
    }

    /// The buffer at any alignment (the many-block path loads and stores 16 bytes at a time).
    @Test func chaCha20AtAnyAlignmentGivesWhatOneBlockAtATimeGives() {
        var random = SeededRandom(seed: 8439_24)
        let cipher = ChaCha20(key: randomBytes(32, using: &random), nonce: randomBytes(12, using: &random))
        for shift in 0..<16 {
            let message = randomBytes(2_000, using: &random)
            var padded = [UInt8](repeating: 0xa5, count: shift) + message + [0x5a]
            padded.withUnsafeMutableBytes { cipher.apply(to: UnsafeMutableRawBufferPointer(rebasing: $0[shift..<shift + message.count]), counter: 9, manyBlocks: true) }
            #expect(Array(padded[shift..<shift + message.count]) == oneBlockAtATime(cipher, message, counter: 9), "shifted \(shift)")
            #expect(padded.prefix(shift).allSatisfy { $0 == 0xa5 } && padded.last == 0x5a, "bytes outside the buffer changed")
        }
    }

    /// Every length 0…300, fed in seeded random pieces (empty ones too), gives the tag of one
    /// update, and the plain reference's.
    @Test func poly1305OverEveryLengthInRandomPiecesGivesTheReferenceTag() {
        var random = SeededRandom(seed: 1305)
        var wrong: [Int] = []
        for length in 0...300 {
            let key = randomBytes(32, using: &random), message = randomBytes(length, using: &random)
            let whole = Poly1305.tag(message, key: key)
            var mac = Poly1305(key: key)
            var start = 0
            while start < message.count {
                let end = min(message.count, start + Int(random.next() % 40))
                message[start..<end].withUnsafeBytes { mac.update($0) }
                start = end
            }
            if whole != referencePoly1305(message, key: key) || mac.finalize() != whole { wrong.append(length) }
        }
        #expect(wrong.isEmpty, "lengths \(wrong.prefix(20))")
    }

    /// The largest r and s the clamping allows and all-ones blocks (the largest products and
    /// carries), and messages that leave h just under, at and over 2^130 − 5.
    @Test func poly1305AtTheCarriesExtremesGivesTheReferenceTag() {
        let keys: [[UInt8]] = [[UInt8](repeating: 0xff, count: 32), [UInt8](repeating: 0, count: 32),
                               [0xff] + [UInt8](repeating: 0, count: 15) + [UInt8](repeating: 0xff, count: 16)]
        for key in keys {
            for length in [0, 1, 15, 16, 17, 31, 32, 33, 64, 255, 256, 257, 1_000] {
                for fill: UInt8 in [0xff, 0x00, 0xfe] {
                    let message = [UInt8](repeating: fill, count: length)
                    #expect(Poly1305.tag(message, key: key) == referencePoly1305(message, key: key), "length \(length), fill \(fill)")
                }
            }
        }
    }

    /// RFC 8439 Appendix A.3's vectors #5–#11, chosen there to reach the final reduction's edge
    /// cases (h ≥ 2^130 − 5, carries out of 2^128, s wrapping).
    @Test func poly1305GivesAppendixA3sEdgeCaseTags() {
        func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(fromHex: hex) ?? [] }
        let ones = String(repeating: "ff", count: 16), zero = String(repeating: "00", count: 16)
        let r1 = "01" + String(repeating: "00", count: 15), r2 = "02" + String(repeating: "00", count: 15)
        let r10 = "01000000000000000400000000000000"
        let cases: [(key: String, message: String, tag: String)] = [
            (r2 + zero, ones, "03" + String(repeating: "00", count: 15)),
            (r2 + ones, "02" + String(repeating: "00", count: 15), "03" + String(repeating: "00", count: 15)),
            (r1 + zero, ones + "f0" + String(repeating: "ff", count: 15) + "11" + String(repeating: "00", count: 15),
             "05" + String(repeating: "00", count: 15)),
            (r1 + zero, ones + "fb" + String(repeating: "fe", count: 15) + String(repeating: "01", count: 16), zero),
            (r2 + zero, "fd" + String(repeating: "ff", count: 15), "fa" + String(repeating: "ff", count: 15)),
            (r10 + zero, "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000" + zero + "01" + String(repeating: "00", count: 15),
             "14000000000000005500000000000000"),
            (r10 + zero, "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000" + zero,
             "13000000000000000000000000000000"),
        ]
        for (index, item) in cases.enumerated() {
            #expect(Secrets.hex(Poly1305.tag(bytes(item.message), key: bytes(item.key))) == item.tag, "vector #\(index + 5)")
        }
    }

    /// Poly1305 the plain way (RFC 8439 §2.5.1), independent of the code under test: numbers
    /// as 26-bit limbs, fully reduced after every block, with branches (it needs no secrecy).
    private func referencePoly1305(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        let p: [UInt64] = [0x3ff_fffb, 0x3ff_ffff, 0x3ff_ffff, 0x3ff_ffff, 0x3ff_ffff]
        func number(_ bytes: some Collection<UInt8>) -> [UInt64] {
            var limbs = [UInt64](repeating: 0, count: 6)
            for (index, byte) in bytes.enumerated() {
                let bit = index * 8
                limbs[bit / 26] |= (UInt64(byte) << (bit % 26)) & 0x3ff_ffff
                limbs[bit / 26 + 1] |= UInt64(byte) >> (26 - bit % 26)
            }
            return reduce(limbs)
        }
        func reduce(_ value: [UInt64]) -> [UInt64] {
            var limbs = value + [0, 0]
            while true {
                for index in 0..<limbs.count - 1 {
                    limbs[index + 1] += limbs[index] >> 26
                    limbs[index] &= 0x3ff_ffff
                }
                if limbs[5...].allSatisfy({ $0 == 0 }) { break }
                for index in 5..<limbs.count {  // 2^130 ≡ 5
                    limbs[index - 5] += limbs[index] * 5
                    limbs[index] = 0
                }
            }
            var result = Array(limbs.prefix(5))
            if result.reversed().lexicographicallyPrecedes(p.reversed()) == false {
                var borrow: UInt64 = 0
                for index in 0..<5 {
                    let need = p[index] + borrow
                    borrow = result[index] < need ? 1 : 0
                    result[index] = result[index] + (borrow << 26) - need
                }
            }
            return result
        }
        func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
            var wide = [UInt64](repeating: 0, count: 10)
            for i in 0..<5 { for j in 0..<5 { wide[i + j] += a[i] * b[j] } }
            return reduce(wide)
        }
        var r = Array(key.prefix(16))
        for index in [3, 7, 11, 15] { r[index] &= 15 }
        for index in [4, 8, 12] { r[index] &= 252 }
        let rNumber = number(r)
        var accumulator = [UInt64](repeating: 0, count: 5)
        for start in stride(from: 0, to: message.count, by: 16) {
            let block = Array(message[start..<min(message.count, start + 16)]) + [1]
            accumulator = multiply(reduce(zip(accumulator, number(block)).map { $0 + $1 }), rNumber)
        }
        // (accumulator + s) mod 2^128, bytewise.
        var out: [UInt8] = []
        var carry = 0
        for index in 0..<16 {
            let bit = index * 8
            var byte = accumulator[bit / 26] >> (bit % 26)
            if bit / 26 + 1 < 5 { byte |= accumulator[bit / 26 + 1] << (26 - bit % 26) }
            let sum = Int(byte & 0xff) + Int(key[16 + index]) + carry
            out.append(UInt8(sum & 0xff))
            carry = sum >> 8
        }
        return out
    }
}
