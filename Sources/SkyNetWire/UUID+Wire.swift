import SkyNetRuntime

extension UUID {
    /// The lowercase text form the wire uses, built without Foundation's formatter (which
    /// showed up in profiles: it goes through sprintf).
    var wireText: String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            writeWireText(into: buffer)
            return 36
        }
    }

    /// Appends `wireText`'s 36 bytes to `bytes`, with no string in between: a task's id is in
    /// every request and every result.
    func appendWireText(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer { all in
            writeWireText(into: UnsafeMutableBufferPointer(rebasing: all[start...]))
        }
    }

    private func writeWireText(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        withUnsafeBytes(of: uuid) { bytes in
            var out = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                buffer[out] = Self.hexDigit(byte >> 4)
                buffer[out + 1] = Self.hexDigit(byte & 0x0F)
                out += 2
            }
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Parses `8-4-4-4-12` hex digits (either case), without Foundation's parser (sscanf).
    init?(wireText text: String) {
        var text = text
        guard let uuid = text.withUTF8({ Self.uuid(wireBytes: $0, upperCase: true) }) else { return nil }
        self.init(uuid: uuid)
    }

    /// The UUID of `text`, 36 bytes of `8-4-4-4-12` hex digits, lower-case unless `upperCase`
    /// (our encoder writes lower case only).
    static func uuid(wireBytes text: UnsafeBufferPointer<UInt8>, upperCase: Bool) -> uuid_t? {
        guard text.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &uuid) { out -> Bool in
            var position = 0
            for index in 0..<16 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = nibble(text[position], upperCase: upperCase),
                      let low = nibble(text[position + 1], upperCase: upperCase) else { return false }
                out[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return parsed ? uuid : nil
    }

    private static func nibble(_ digit: UInt8, upperCase: Bool) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F") where upperCase: digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
