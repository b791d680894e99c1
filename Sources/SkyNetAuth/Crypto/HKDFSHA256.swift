/// HKDF with HMAC-SHA256 (RFC 5869): extract a pseudorandom key from input keying material and
/// a salt, then expand it into as many output bytes as asked (at most 255 × 32).
package enum HKDFSHA256 {
    /// PRK = HMAC(salt, ikm); an empty salt stands for 32 zero bytes (RFC 5869 §2.2).
    package static func extract(salt: [UInt8], inputKeyMaterial: [UInt8]) -> [UInt8] {
        HMACSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: SHA256.digestCount) : salt).tag(inputKeyMaterial)
    }

    /// T(1) | T(2) | … cut to `count`, T(i) = HMAC(PRK, T(i−1) | info | i) (RFC 5869 §2.3).
    package static func expand(pseudorandomKey: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= 255 * SHA256.digestCount, "HKDF gives at most 8,160 bytes")
        let mac = HMACSHA256(key: pseudorandomKey)
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < count {
            previous = mac.tag(previous + info + [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(count))
    }

    /// Extract, then expand.
    package static func derive(salt: [UInt8], inputKeyMaterial: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        expand(pseudorandomKey: extract(salt: salt, inputKeyMaterial: inputKeyMaterial), info: info, count: count)
    }
}
