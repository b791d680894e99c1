import SkyNetRuntime

/// A cursor over one line that matches pieces of an exact form, or fails: how the lines we
/// write most (journal entries, `scan` requests, `result` replies) are read without building a
/// JSON tree. A caller that gets nil falls back to the full parser, which decides.
package struct ExactLineReader {
    let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    package init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    package var atEnd: Bool { index == bytes.count }

    package mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
        index += count
        return true
    }

    /// An integer in JSON's grammar that fits an `Int`, read from its digits (no string).
    package mutating func integer() -> Int? {
        let start = index
        guard jsonInteger() else { return nil }
        let negative = bytes[start] == UInt8(ascii: "-")
        var value = 0
        for digit in bytes[(negative ? start + 1 : start)..<index] {
            // Built on the negative side, which holds Int.min.
            let (tens, over) = value.multipliedReportingOverflow(by: 10)
            let (next, under) = tens.subtractingReportingOverflow(Int(digit &- UInt8(ascii: "0")))
            guard !over, !under else { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// A finite number in JSON's grammar: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    package mutating func number() -> Double? {
        let start = index
        guard jsonInteger() else { return nil }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { return nil }
        }
        guard let value = Double(text(from: start)), value.isFinite else { return nil }
        return value
    }

    /// An integer as our encoder writes it (`String(Int)`): `integer()`, but not `-0`.
    package mutating func canonicalInteger() -> Int? {
        let negative = peek(UInt8(ascii: "-"))
        guard let value = integer(), !(negative && value == 0) else { return nil }
        return value
    }

    /// A number as our encoder writes a `Double` (its `description`: `1.0`, not `1`).
    package mutating func canonicalNumber() -> Double? {
        let start = index
        // Most are whole (`0.0`, `5.0`): below 10^15 such a number is exact, and its
        // description is its digits and `.0`, so it is read with no text made or parsed.
        if let whole = integer(), whole.magnitude < 1_000_000_000_000_000, literal(".0"),
           !(index < bytes.count && Self.continuesNumber(bytes[index])) {
            return whole == 0 && bytes[start] == UInt8(ascii: "-") ? -0.0 : Double(whole)
        }
        index = start
        guard let value = number(), "\(value)".utf8.elementsEqual(bytes[start..<index]) else { return nil }
        return value
    }

    /// Whether `byte` would go on with a number written so far (more digits, an exponent).
    private static func continuesNumber(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    /// A UUID in quotes as our encoder writes it (`UUID.appendWireText`: lower-case hex digits).
    package mutating func wireUUID() -> UUID? {
        guard bytes.count - index >= 38, bytes[index] == UInt8(ascii: "\""), bytes[index + 37] == UInt8(ascii: "\""),
              let uuid = UUID.uuid(wireBytes: UnsafeBufferPointer(rebasing: bytes[index + 1..<index + 37]), upperCase: false)
        else { return nil }
        index += 38
        return UUID(uuid: uuid)
    }

    /// `-?(0|[1-9][0-9]*)`: no leading zeros, as JSON has it.
    private mutating func jsonInteger() -> Bool {
        if peek(UInt8(ascii: "-")) { index += 1 }
        if peek(UInt8(ascii: "0")) {
            index += 1
            return true
        }
        return digits() > 0
    }

    private mutating func digits() -> Int {
        let start = index
        skip { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        return index - start
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    /// A string without escapes or control characters, valid UTF-8.
    package mutating func plainString() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        skip { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 >= 0x20 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let value = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        index += 1
        return value
    }

    /// The bytes of a string without escapes or control characters, unchecked as text (base64,
    /// which the caller checks): no copy of a long value.
    package mutating func rawStringBytes() -> UnsafeBufferPointer<UInt8>? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        skip { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 >= 0x20 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let value = UnsafeBufferPointer(rebasing: bytes[start..<index])
        index += 1
        return value
    }

    /// The JSON value that fills the rest of the line but its last `suffix`, through the
    /// general parser, as a member of the line's object (a call's arguments, a method's
    /// result): nested as deep as the parser takes in a whole line, and no deeper.
    package mutating func value(before suffix: StaticString) -> JSONValue? {
        let end = bytes.count - suffix.utf8CodeUnitCount
        guard end > index else { return nil }
        for offset in 0..<suffix.utf8CodeUnitCount where bytes[end + offset] != suffix.utf8Start[offset] { return nil }
        guard let value = try? JSONParser.parse(UnsafeBufferPointer(rebasing: bytes[index..<end]), depth: 1) else { return nil }
        index = bytes.count
        return value
    }

    private mutating func skip(while accepted: (UInt8) -> Bool) {
        while index < bytes.count, accepted(bytes[index]) { index += 1 }
    }

    private func text(from start: Int) -> String {
        guard index > start else { return "" }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }
}
