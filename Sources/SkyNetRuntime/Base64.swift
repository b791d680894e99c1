/// Strict base64 (RFC 4648 §4: the standard alphabet, `=` padding, no line breaks or spaces),
/// as file chunks travel inside JSON lines (docs/PROTOCOL.md, "Files").
///
/// Table-driven and written for bytes in buffers: a chunk is encoded straight into the line
/// being built and decoded straight into the buffer written to disk, with no `Data` or
/// `String` in between (Foundation's is as fast, but allocates both ways).
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet (`=` included).
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    /// The characters `byteCount` bytes take once encoded, padding included.
    package static func encodedCount(_ byteCount: Int) -> Int { (byteCount + 2) / 3 * 4 }

    /// The most bytes `characterCount` characters can decode to.
    package static func decodedCapacity(_ characterCount: Int) -> Int { characterCount / 4 * 3 }

    /// Appends the encoding of `bytes` to `out`.
    package static func encode(_ bytes: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) {
        let start = out.count
        let count = encodedCount(bytes.count)
        out.append(contentsOf: repeatElement(0, count: count))
        alphabet.withUnsafeBufferPointer { alphabet in
            out.withUnsafeMutableBufferPointer { buffer in
                var output = start, input = 0
                let whole = bytes.count - bytes.count % 3
                while input < whole {
                    let triple = UInt32(bytes[input]) << 16 | UInt32(bytes[input + 1]) << 8 | UInt32(bytes[input + 2])
                    buffer[output] = alphabet[Int(triple >> 18)]
                    buffer[output + 1] = alphabet[Int(triple >> 12 & 63)]
                    buffer[output + 2] = alphabet[Int(triple >> 6 & 63)]
                    buffer[output + 3] = alphabet[Int(triple & 63)]
                    input += 3
                    output += 4
                }
                let rest = bytes.count - whole
                guard rest > 0 else { return }
                let second = rest == 2 ? UInt32(bytes[input + 1]) : 0
                let triple = UInt32(bytes[input]) << 16 | second << 8
                buffer[output] = alphabet[Int(triple >> 18)]
                buffer[output + 1] = alphabet[Int(triple >> 12 & 63)]
                buffer[output + 2] = rest == 2 ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "=")
                buffer[output + 3] = UInt8(ascii: "=")
            }
        }
    }

    /// The encoding of `bytes` as an array (tests, small values).
    package static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        bytes.withUnsafeBytes { encode($0, appendingTo: &out) }
        return out
    }

    /// Decodes `text` into the start of `out` and returns how many bytes it wrote; nil when
    /// `text` is not strict base64 (a length that is not a multiple of 4, a character outside
    /// the alphabet, `=` anywhere but the last one or two places, padding bits that are not
    /// zero) or decodes to more than `out` holds. `out` may be partly written then.
    package static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard text.count % 4 == 0 else { return nil }
        guard text.count > 0 else { return 0 }
        let equals = UInt8(ascii: "=")
        let padding = text[text.count - 1] == equals ? (text[text.count - 2] == equals ? 2 : 1) : 0
        let decoded = text.count / 4 * 3 - padding
        guard decoded <= out.count else { return nil }
        return values.withUnsafeBufferPointer { values -> Int? in
            var input = 0, output = 0
            let whole = padding == 0 ? text.count : text.count - 4
            // Invalid characters are found by or-ing the values: any 0xFF sets bit 7.
            var invalid: UInt8 = 0
            while input < whole {
                let a = values[Int(text[input])], b = values[Int(text[input + 1])]
                let c = values[Int(text[input + 2])], d = values[Int(text[input + 3])]
                invalid |= a | b | c | d
                let quad = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                out[output] = UInt8(truncatingIfNeeded: quad >> 16)
                out[output + 1] = UInt8(truncatingIfNeeded: quad >> 8)
                out[output + 2] = UInt8(truncatingIfNeeded: quad)
                input += 4
                output += 3
            }
            guard invalid & 0x80 == 0 else { return nil }
            guard padding > 0 else { return output }
            let a = values[Int(text[input])], b = values[Int(text[input + 1])]
            let c = padding == 1 ? values[Int(text[input + 2])] : 0
            guard (a | b | c) & 0x80 == 0 else { return nil }
            // Strict: the bits the padding stands for must be zero (one encoding per value).
            if padding == 2, b & 0x0F != 0 { return nil }
            if padding == 1, c & 0x03 != 0 { return nil }
            out[output] = a << 2 | b >> 4
            if padding == 1 { out[output + 1] = b << 4 | c >> 2 }
            return decoded
        }
    }

    /// The bytes `text` stands for, or nil when it is not strict base64 (a value of a call; the
    /// file chunks use the buffer form above).
    package static func decode(_ text: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: decodedCapacity(text.count))
        let count = text.withUnsafeBytes { text in out.withUnsafeMutableBytes { decode(text, into: $0) } }
        guard let count else { return nil }
        out.removeLast(out.count - count)
        return out
    }
}
