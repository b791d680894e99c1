/// Why bytes are not a PNG this decoder reads.
package struct PNGError: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// A decoded PNG, enough to tell whether a screenshot shows anything: 8-bit greyscale, grey
/// with alpha, RGB or RGBA, not interlaced (what Chromium writes). Chunk CRCs are checked;
/// sizes are bounded (`maxPixels`), so any input decodes in bounded memory or is refused.
package struct PNGImage: Sendable {
    package static let signature: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
    package static let maxPixels = 40_000_000

    package let width: Int
    package let height: Int
    /// Bytes per pixel: 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA.
    package let channels: Int
    /// Rows of `width * channels` bytes, unfiltered.
    package let pixels: [UInt8]

    package init(bytes: [UInt8]) throws(PNGError) {
        guard bytes.starts(with: Self.signature) else { throw PNGError("not a PNG (no signature)") }
        var header: (width: Int, height: Int, channels: Int)?
        var compressed: [UInt8] = []
        var position = Self.signature.count
        chunks: while true {
            guard position + 12 <= bytes.count else { throw PNGError("PNG cut short (no IEND)") }
            let length = Self.bigEndian(bytes, at: position)
            guard length <= bytes.count - position - 12 else { throw PNGError("PNG chunk cut short") }
            let typeAndData = Array(bytes[position + 4..<position + 8 + length])
            guard Self.crc32(typeAndData) == UInt32(Self.bigEndian(bytes, at: position + 8 + length)) else {
                throw PNGError("PNG chunk CRC mismatch")
            }
            let type = String(decoding: typeAndData[0..<4], as: UTF8.self)
            let data = Array(typeAndData[4...])
            position += 12 + length
            switch type {
            case "IHDR": header = try Self.readHeader(data)
            case "IDAT": compressed += data
            case "IEND": break chunks
            case "PLTE": throw PNGError("palette PNGs are not supported")
            default: continue  // ancillary chunks (text, gamma, physical size) do not matter here
            }
        }
        guard let header else { throw PNGError("PNG without IHDR") }
        let rowBytes = header.width * header.channels
        let expected = header.height * (1 + rowBytes)
        let filtered: [UInt8]
        do {
            filtered = try Inflate.zlib(compressed, limit: expected)
        } catch {
            throw PNGError("PNG image data: \(error)")
        }
        guard filtered.count == expected else { throw PNGError("PNG image data is \(filtered.count) bytes, not \(expected)") }
        width = header.width
        height = header.height
        channels = header.channels
        pixels = try Self.unfilter(filtered, rows: header.height, rowBytes: rowBytes, pixelBytes: header.channels)
    }

    /// The channels of the pixel at (`x`, `y`), for example `[r, g, b, a]`.
    package func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        let start = (y * width + x) * channels
        return pixels[start..<start + channels]
    }

    /// How many different colours the image has, counting up to `max` (then it stops).
    package func distinctColours(max: Int = .max) -> Int {
        var seen = Set<UInt32>()
        var index = 0
        while index < pixels.count, seen.count < max {
            var colour: UInt32 = 0
            for offset in 0..<channels { colour = colour << 8 | UInt32(pixels[index + offset]) }
            seen.insert(colour)
            index += channels
        }
        return seen.count
    }

    /// One colour everywhere: a blank page, a screenshot of nothing.
    package var isBlank: Bool { distinctColours(max: 2) <= 1 }

    private static func readHeader(_ data: [UInt8]) throws(PNGError) -> (width: Int, height: Int, channels: Int) {
        guard data.count == 13 else { throw PNGError("IHDR is \(data.count) bytes, not 13") }
        let width = bigEndian(data, at: 0), height = bigEndian(data, at: 4)
        guard width > 0, height > 0, width <= maxPixels / height else { throw PNGError("PNG of \(width)×\(height) is empty or too large") }
        guard data[8] == 8 else { throw PNGError("bit depth \(data[8]) is not supported (8 only)") }
        let channels: Int
        switch data[9] {
        case 0: channels = 1
        case 2: channels = 3
        case 4: channels = 2
        case 6: channels = 4
        default: throw PNGError("colour type \(data[9]) is not supported")
        }
        guard data[10] == 0, data[11] == 0 else { throw PNGError("unknown compression or filter method") }
        guard data[12] == 0 else { throw PNGError("interlaced PNGs are not supported") }
        return (width, height, channels)
    }

    /// Undoes the per-row filters (0 none, 1 sub, 2 up, 3 average, 4 Paeth).
    private static func unfilter(_ data: [UInt8], rows: Int, rowBytes: Int, pixelBytes: Int) throws(PNGError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: rows * rowBytes)
        for row in 0..<rows {
            let filter = data[row * (rowBytes + 1)]
            let source = row * (rowBytes + 1) + 1, target = row * rowBytes
            for index in 0..<rowBytes {
                let raw = data[source + index]
                let left = index >= pixelBytes ? Int(out[target + index - pixelBytes]) : 0
                let up = row > 0 ? Int(out[target + index - rowBytes]) : 0
                let upLeft = row > 0 && index >= pixelBytes ? Int(out[target + index - rowBytes - pixelBytes]) : 0
                let predicted: Int
                switch filter {
                case 0: predicted = 0
                case 1: predicted = left
                case 2: predicted = up
                case 3: predicted = (left + up) / 2
                case 4: predicted = paeth(left, up, upLeft)
                default: throw PNGError("unknown filter type \(filter) in row \(row)")
                }
                out[target + index] = raw &+ UInt8(truncatingIfNeeded: predicted)
            }
        }
        return out
    }

    private static func paeth(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let p = a + b - c
        let pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
        return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
    }

    private static func bigEndian(_ bytes: [UInt8], at index: Int) -> Int {
        bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
    }

    /// The CRC-32 of PNG chunks (and zip, and Ethernet).
    package static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc = crcTable[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8)
        }
        return crc ^ 0xffff_ffff
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xedb8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
}
