/// Small tools for secrets: constant-time comparison, random nonces, hex.
package enum Secrets {
    /// Whether two byte strings are equal, in time that depends only on their lengths.
    ///
    /// Unequal lengths answer at once (lengths are not secret: a MAC's or a nonce's is fixed);
    /// equal lengths are compared whole, folding every difference into one byte, so the time
    /// does not tell where the first difference is.
    package static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) {
            difference |= x ^ y
        }
        return difference == 0
    }

    /// `equal` for bytes in memory: the same constant time, without the generic iteration
    /// (which costs more than the comparison itself on a hot path: a tag per message).
    package static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count {
            difference |= a[index] ^ b[index]
        }
        return difference == 0
    }

    /// `count` bytes from the kernel's CSPRNG (getrandom(2), through the standard library's
    /// SystemRandomNumberGenerator: Glibc here does not export getrandom). None for a count
    /// below one.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var generator = SystemRandomNumberGenerator()
        let words: [UInt64] = (0..<(count + 7) / 8).map { _ in generator.next() }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }

    /// Lowercase hex.
    package static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        let count = bytes.count
        return digits.withUTF8Buffer { digits in
            String(unsafeUninitializedCapacity: count * 2) { text in
                var index = 0
                for byte in bytes {
                    text[index] = digits[Int(byte >> 4)]
                    text[index + 1] = digits[Int(byte & 0x0f)]
                    index += 2
                }
                return index
            }
        }
    }

    /// Bytes from hex (either case); nil if the length is odd or a character is not hex.
    package static func bytes(fromHex text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for character in utf8 {
            guard let nibble = hexValue(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }

    /// The value of one hex digit's ASCII code (either case), or nil.
    package static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
