extension JSONValue {
    /// The value as JSON text on one line (a string's control characters escaped), as
    /// `JSONParser` reads it back. Objects' keys are written in sorted order, so one value is
    /// always the same bytes.
    package var bytes: [UInt8] {
        var bytes: [UInt8] = []
        write(to: &bytes)
        return bytes
    }

    package func write(to bytes: inout [UInt8]) {
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): bytes.append(contentsOf: String(value).utf8)
        case .double(let value): bytes.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .outOfRange(let text): bytes.append(contentsOf: text.utf8)
        case .string(let text): JSONLine.appendString(text, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONLine.appendString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                members[key]?.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
