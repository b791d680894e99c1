import SkyNetRuntime

extension UUID {
    /// Appends the lower-case text form the wire uses (36 bytes, `8-4-4-4-12` hex digits) to
    /// `bytes`, without Foundation's formatter (it goes through sprintf) and with no string in
    /// between: a task's id is in every request and every result.
    func appendWireText(to bytes: inout [UInt8]) {
        withUnsafeBytes(of: uuid) { uuid in
            for (index, byte) in uuid.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0x0F))
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
