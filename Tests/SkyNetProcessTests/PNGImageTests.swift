import Foundation
import SkyNetTestSupport
import Testing

/// The PNG check behind "the screenshot is not blank": our inflate (stored, fixed and dynamic
/// blocks) and PNG decoding (chunks, CRCs, every row filter), on hand-built images and on
/// streams made by zlib itself. (A PNG made by Chromium: HeadlessChromiumTests.)
@Suite struct PNGImageTests {
    @Test func aOneColourImageInAStoredBlockIsBlank() throws {
        let row: [UInt8] = [0] + Array([[UInt8]](repeating: [10, 20, 30], count: 4).joined())
        let image = try PNGImage(bytes: Self.png(width: 4, height: 3, colourType: 2, scanlines: Array([[UInt8]](repeating: row, count: 3).joined())))
        #expect(image.width == 4)
        #expect(image.height == 3)
        #expect(image.channels == 3)
        #expect(image.distinctColours() == 1)
        #expect(image.isBlank)
        #expect(Array(image.pixel(x: 3, y: 2)) == [10, 20, 30])
    }

    @Test func everyRowFilterIsUndone() throws {
        // 3×5 RGBA, a different colour in each pixel of a row, each row with its own filter.
        let width = 3, height = 5
        let source: [[UInt8]] = (0..<height).map { y in
            (0..<width).flatMap { x -> [UInt8] in
                let red = UInt8(40 * x + 7 * y), green = UInt8(200 - 30 * y), blue = UInt8(x * y * 11)
                return [red, green, blue, 255]
            }
        }
        var scanlines: [UInt8] = []
        for (y, row) in source.enumerated() {
            let filter = UInt8(y)  // 0 none, 1 sub, 2 up, 3 average, 4 Paeth
            scanlines.append(filter)
            for index in row.indices {
                let left = index >= 4 ? Int(row[index - 4]) : 0
                let up = y > 0 ? Int(source[y - 1][index]) : 0
                let upLeft = y > 0 && index >= 4 ? Int(source[y - 1][index - 4]) : 0
                let predictions: [Int] = [0, left, up, (left + up) / 2, Self.paeth(left, up, upLeft)]
                let predicted = predictions[Int(filter)]
                scanlines.append(row[index] &- UInt8(predicted))
            }
        }
        let image = try PNGImage(bytes: Self.png(width: width, height: height, colourType: 6, scanlines: scanlines))
        #expect(image.pixels == Array(source.joined()))
        #expect(image.distinctColours() == 15)
        #expect(image.distinctColours(max: 2) == 2)
        #expect(!image.isBlank)
    }

    @Test func fixedAndDynamicHuffmanStreamsFromZlibInflate() throws {
        // zlib.compressobj(9, DEFLATED, 15, 9, Z_FIXED): one fixed-Huffman block.
        let fixed = "eAELzq70Sy1RKE5OzCtWCMbF0VFIVEjLrEhNUfAoTUvLTcxTSMrJT85WKM8syVBISgSyilLTUotS85JTi/UA5v8d7Q=="
        let fixedText = "SkyNet scans SkyNet scans SkyNet scans, a fixed Huffman block with back references."
        #expect(try Inflate.zlib(Self.bytes(base64: fixed), limit: 1000) == Array(fixedText.utf8))
        // zlib.compress(text, 9): one dynamic-Huffman block, 4090 bytes from 658.
        let dynamicText = (0..<300).map { "task \($0) done\n" }.joined()
        #expect(try Inflate.zlib(Self.bytes(base64: Self.dynamicStream), limit: 10_000) == Array(dynamicText.utf8))
        // Bounded: more than the limit is an error, not a bigger buffer.
        #expect(throws: InflateError.self) { try Inflate.zlib(Self.bytes(base64: Self.dynamicStream), limit: 4089) }
    }

    @Test func damagedImagesAreErrors() throws {
        let row: [UInt8] = [0, 1, 2, 3]
        let good = Self.png(width: 1, height: 1, colourType: 2, scanlines: row)
        #expect(throws: Never.self) { try PNGImage(bytes: good) }
        #expect(throws: PNGError.self) { try PNGImage(bytes: Array(good.dropFirst())) }
        #expect(throws: PNGError.self) { try PNGImage(bytes: Array(good.prefix(good.count - 12))) }  // no IEND
        var flipped = good
        flipped[20] ^= 1  // in IHDR: its CRC no longer matches
        #expect(throws: PNGError.self) { try PNGImage(bytes: flipped) }
        // A scanline filter that does not exist.
        #expect(throws: PNGError.self) { try PNGImage(bytes: Self.png(width: 1, height: 1, colourType: 2, scanlines: [9, 1, 2, 3])) }
        // Image data shorter than the header says.
        #expect(throws: PNGError.self) { try PNGImage(bytes: Self.png(width: 2, height: 1, colourType: 2, scanlines: row)) }
    }

    /// zlib.compress("task 0 done\\n…task 299 done\\n", 9) in base64.
    static let dynamicStream = [
        "eNpd1zsO7FQURNGcUbwhdJXbv+EgQYQEAW/+QkgEtchudna37OVzf/769x8/Pj9+++vP33/5+e85c+6cjzl/53zO+ZrzPednzu/O",
        "YvBOzo7Ozs4Oz07Pjs/OzwZkC7oF5bdvQbegW9At6BZ0C7oF3YJjC44tOPj7t+DYgmMLji04tuDYgmMLvlvw3YLvFnx5ArbguwXf",
        "LfhuwXcLvltwbsG5BecWnFtw8hBuwbkF5xacW3BuwbUF1xZcW3BtwbUFF+/BFlxbcG3BtQX3FtxbcG/BvQX3FtxbcPMqbsG9BfcW",
        "PFvwbMGzBc8WPFvwbMGzBQ8abMGzBe8WvFvwbsG7Be8WvFvwbsG7BS8gKRIkfTDpA0ofVPrA0geXPsD0QaYPNH1o+R+PtAikQkqk",
        "RoqkSsokTgYoU62mBSsDlkHLwGXwMoAZxAxkBjNz+OGgBTaDmwHOIGegM9gZ8Ax6Bj7z9StGC4IGQoOhAdGgaGA0OBogDZLm9JNK",
        "C5gGTQOnwdMAahA1kBpMDajm8vtOC64GWIOsgdZga8A16Bp4Db7mdtmgBWKDsQHZoGxgNjgboA3SBmrzuPnQgraB2+BtADeIG8gN",
        "5gZ0g7p5XcPcw1jEcLe4W9wt7hZ3i7vF3eJucbdxKaQFd4u7xd3ibnG3uFvcrfupC+r/NlRa3FFdUt1SXVPdU11Ucbe4W9zt4bpM",
        "C+4Wd4u7xd3ibnG3uFvcLe726+5OC+4Wd4u7xd3ibnG3uFvcLe729CJBC+4Wd4u7xd3ibnG3uFvcLe728lZDC+4Wd4u7xd3ibnG3",
        "uFvcLe729opFC+4Wd4u7xd3ibnG3uFvcLe728b5HC+4Wd4u7xd3ibnG3uFvcLe729fL5X8s/tVPjGQ==",
    ].joined()

    // MARK: - Building PNGs by hand

    /// A PNG whose image data is one stored (uncompressed) deflate block.
    static func png(width: Int, height: Int, colourType: UInt8, scanlines: [UInt8]) -> [UInt8] {
        let length = UInt16(scanlines.count)
        let zlib: [UInt8] = [0x78, 0x01, 0x01, UInt8(length & 0xff), UInt8(length >> 8), UInt8(~length & 0xff), UInt8(~length >> 8)]
            + scanlines + bigEndian(Inflate.adler32(scanlines))
        let header = bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, colourType, 0, 0, 0]
        return PNGImage.signature + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(PNGImage.crc32(body))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    }

    static func paeth(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let p = a + b - c
        let pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
        return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
    }

    static func bytes(base64: String) throws -> [UInt8] {
        Array(try #require(Data(base64Encoded: base64)))
    }
}
