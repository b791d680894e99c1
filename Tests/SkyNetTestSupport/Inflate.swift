/// Why compressed data could not be read.
package struct InflateError: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// DEFLATE decompression (RFC 1951), in a zlib wrapper (RFC 1950): what a PNG's image data is.
/// Stored, fixed-Huffman and dynamic-Huffman blocks; canonical Huffman decoding one bit at a
/// time, after Mark Adler's `puff`: slow but short, and a screenshot is a few MiB at most.
/// Foundation on Linux has no zlib, hence our own.
package enum Inflate {
    /// Decompresses a zlib stream, refusing to produce more than `limit` bytes (bounded memory
    /// for any input); the Adler-32 checksum at the end must match.
    package static func zlib(_ bytes: [UInt8], limit: Int) throws(InflateError) -> [UInt8] {
        guard bytes.count >= 6 else { throw InflateError("zlib stream too short") }
        let method = bytes[0], flags = bytes[1]
        guard method & 0x0f == 8, method >> 4 <= 7, (UInt16(method) << 8 | UInt16(flags)) % 31 == 0 else {
            throw InflateError("not a zlib deflate stream")
        }
        guard flags & 0x20 == 0 else { throw InflateError("zlib preset dictionary not supported") }
        var reader = BitReader(bytes: bytes, position: 2)
        let output = try raw(&reader, limit: limit)
        let end = reader.byteAlignedPosition
        guard end + 4 <= bytes.count else { throw InflateError("zlib checksum missing") }
        let expected = bytes[end..<end + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard adler32(output) == expected else { throw InflateError("zlib checksum mismatch") }
        return output
    }

    /// The Adler-32 checksum zlib ends with.
    package static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    /// Raw DEFLATE blocks until the one marked last.
    static func raw(_ reader: inout BitReader, limit: Int) throws(InflateError) -> [UInt8] {
        var output: [UInt8] = []
        var last = false
        while !last {
            last = try reader.bits(1) == 1
            switch try reader.bits(2) {
            case 0: try stored(&reader, into: &output, limit: limit)
            case 1: try codes(&reader, Huffman.fixedLengths, Huffman.fixedDistances, into: &output, limit: limit)
            case 2:
                let (lengths, distances) = try dynamicTables(&reader)
                try codes(&reader, lengths, distances, into: &output, limit: limit)
            default: throw InflateError("invalid deflate block type")
            }
        }
        return output
    }

    private static func stored(_ reader: inout BitReader, into output: inout [UInt8], limit: Int) throws(InflateError) {
        var position = reader.byteAlignedPosition
        guard position + 4 <= reader.bytes.count else { throw InflateError("stored block header cut short") }
        let length = Int(reader.bytes[position]) | Int(reader.bytes[position + 1]) << 8
        let complement = Int(reader.bytes[position + 2]) | Int(reader.bytes[position + 3]) << 8
        guard length == ~complement & 0xffff else { throw InflateError("stored block length check failed") }
        position += 4
        guard position + length <= reader.bytes.count else { throw InflateError("stored block cut short") }
        guard output.count + length <= limit else { throw InflateError("inflated data over \(limit) bytes") }
        output.append(contentsOf: reader.bytes[position..<position + length])
        reader = BitReader(bytes: reader.bytes, position: position + length)
    }

    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                                       2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// The literals, lengths and distances of one Huffman-coded block.
    private static func codes(_ reader: inout BitReader, _ lengths: Huffman, _ distances: Huffman,
                              into output: inout [UInt8], limit: Int) throws(InflateError) {
        while true {
            let symbol = try lengths.decode(&reader)
            if symbol < 256 {
                guard output.count < limit else { throw InflateError("inflated data over \(limit) bytes") }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < lengthBase.count else { throw InflateError("invalid length code") }
                let length = lengthBase[index] + (try reader.bits(lengthExtra[index]))
                let code = try distances.decode(&reader)
                guard code < distanceBase.count else { throw InflateError("invalid distance code") }
                let distance = distanceBase[code] + (try reader.bits(distanceExtra[code]))
                guard distance <= output.count else { throw InflateError("distance too far back") }
                guard output.count + length <= limit else { throw InflateError("inflated data over \(limit) bytes") }
                // Byte by byte: a copy may overlap what it is producing (distance < length).
                let start = output.count - distance
                for offset in 0..<length { output.append(output[start + offset]) }
            }
        }
    }

    /// Reads a dynamic block's code-length code, then its literal/length and distance codes.
    private static func dynamicTables(_ reader: inout BitReader) throws(InflateError) -> (Huffman, Huffman) {
        let literalCount = try reader.bits(5) + 257, distanceCount = try reader.bits(5) + 1, codeCount = try reader.bits(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw InflateError("too many codes in a dynamic block") }
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        var codeLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeCount { codeLengths[order[index]] = try reader.bits(3) }
        let codeLengthCode = try Huffman(lengths: codeLengths)
        var lengths: [Int] = []
        while lengths.count < literalCount + distanceCount {
            let symbol = try codeLengthCode.decode(&reader)
            switch symbol {
            case 0..<16: lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else { throw InflateError("repeat with no previous length") }
                lengths += repeatElement(previous, count: 3 + (try reader.bits(2)))
            case 17: lengths += repeatElement(0, count: 3 + (try reader.bits(3)))
            default: lengths += repeatElement(0, count: 11 + (try reader.bits(7)))
            }
        }
        guard lengths.count == literalCount + distanceCount else { throw InflateError("code lengths overrun") }
        guard lengths[256] != 0 else { throw InflateError("no end-of-block code") }
        return (try Huffman(lengths: Array(lengths[..<literalCount])), try Huffman(lengths: Array(lengths[literalCount...])))
    }
}

/// Reads bits least significant first, as DEFLATE packs them.
struct BitReader {
    let bytes: [UInt8]
    private(set) var position: Int
    private var bitOffset = 0

    init(bytes: [UInt8], position: Int) {
        self.bytes = bytes
        self.position = position
    }

    /// The next `count` bits as a number (the first bit read is the lowest).
    mutating func bits(_ count: Int) throws(InflateError) -> Int {
        var value = 0
        for index in 0..<count {
            guard position < bytes.count else { throw InflateError("compressed data cut short") }
            value |= Int(bytes[position] >> bitOffset & 1) << index
            bitOffset += 1
            if bitOffset == 8 { bitOffset = 0; position += 1 }
        }
        return value
    }

    /// The next whole byte's index (skipping the rest of a partly read byte).
    var byteAlignedPosition: Int { bitOffset == 0 ? position : position + 1 }
}

/// A canonical Huffman code: how many codes each length has, and the symbols by code.
struct Huffman {
    private var counts = [Int](repeating: 0, count: 16)
    private var symbols: [Int] = []

    init(lengths: [Int]) throws(InflateError) {
        for length in lengths { counts[length] += 1 }
        var left = 1
        for length in 1...15 {
            left = left * 2 - counts[length]
            guard left >= 0 else { throw InflateError("over-subscribed Huffman code") }
        }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        symbols = [Int](repeating: 0, count: lengths.count)
        for (symbol, length) in lengths.enumerated() where length != 0 {
            symbols[offsets[length]] = symbol
            offsets[length] += 1
        }
    }

    func decode(_ reader: inout BitReader) throws(InflateError) -> Int {
        var code = 0, first = 0, index = 0
        for length in 1...15 {
            code |= try reader.bits(1)
            let count = counts[length]
            if code - count < first { return symbols[index + code - first] }
            index += count
            first = (first + count) << 1
            code <<= 1
        }
        throw InflateError("invalid Huffman code")
    }

    static let fixedLengths: Huffman = {
        let lengths = [Int](repeating: 8, count: 144) + [Int](repeating: 9, count: 112) + [Int](repeating: 7, count: 24)
            + [Int](repeating: 8, count: 8)
        return (try? Huffman(lengths: lengths)) ?? Huffman()
    }()
    static let fixedDistances: Huffman = (try? Huffman(lengths: [Int](repeating: 5, count: 30))) ?? Huffman()

    private init() {}
}
