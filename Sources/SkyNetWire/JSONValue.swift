import SkyNetRuntime

/// A parsed JSON value.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits an `Int`.
    case int(Int)
    /// Any other number a `Double` holds finitely (an integer too large for `Int` included).
    case double(Double)
    /// A number too large for a `Double`, as written (`1e999`): kept rather than refused, so
    /// the fields around it, the request's id among them, can still be read.
    case outOfRange(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

/// Why a line is not JSON, with the byte offset where parsing stopped.
package struct JSONSyntaxError: Error, CustomStringConvertible {
    package let reason: String
    let offset: Int
    package var description: String { "\(reason) at byte \(offset)" }

    /// Where the error is in `text` (the bytes that were parsed), for people: a line and a
    /// column, both from 1, the column counted in characters (Unicode scalars).
    package func location<Bytes: Collection<UInt8>>(in text: Bytes) -> (line: Int, column: Int) {
        var line = 1, column = 1
        for byte in text.prefix(offset) {
            if byte == 10 {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                // Not a UTF-8 continuation byte: a new character.
                column += 1
            }
        }
        return (line, column)
    }
}

/// A strict JSON parser (RFC 8259) for one line: rejects invalid UTF-8, raw control
/// characters in strings, trailing garbage, and nesting deeper than `maxDepth`, so no line,
/// however hostile, can exhaust the reader thread's stack.
package struct JSONParser {
    static let maxDepth = 32

    private let bytes: [UInt8]
    private var index = 0

    /// Parses `input` as one JSON value; `depth`: how deep it sits in a value around it (the
    /// limit counts from the outermost).
    package static func parse<Bytes: Collection<UInt8>>(_ input: Bytes, depth: Int = 0) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: Array(input))
        parser.skipSpace()
        let value = try parser.value(depth: depth)
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(reason: reason, offset: index)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth)") }
        guard let byte = current else { throw error("unexpected end") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw error("unexpected character")
        }
        index += count
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if current == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipSpace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try string()
            skipSpace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            members[key] = try value(depth: depth + 1)
            skipSpace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if current == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try value(depth: depth + 1))
            skipSpace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte >= 0x20 { index += 1 }
        if current == UInt8(ascii: "\"") {
            let text = try utf8(bytes[start..<index])
            index += 1
            return text
        }
        var collected = Array(bytes[start..<index])
        while true {
            guard let byte = current else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try utf8(collected[...])
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &collected)
            case 0..<0x20:
                throw error("control character in string")
            default:
                collected.append(byte)
                index += 1
            }
        }
    }

    private func utf8(_ slice: ArraySlice<UInt8>) throws(JSONSyntaxError) -> String {
        guard let text = String(validating: slice, as: UTF8.self) else { throw error("invalid UTF-8") }
        return text
    }

    private mutating func escape(into collected: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = current else { throw error("unterminated string") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): collected.append(byte)
        case UInt8(ascii: "b"): collected.append(0x08)
        case UInt8(ascii: "f"): collected.append(0x0C)
        case UInt8(ascii: "n"): collected.append(0x0A)
        case UInt8(ascii: "r"): collected.append(0x0D)
        case UInt8(ascii: "t"): collected.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("unpaired surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
            collected.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw error("invalid escape")
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unterminated escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Secrets.hexValue(bytes[index]) else { throw error("invalid \\u escape") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            throw error("invalid number")
        }
        if first == UInt8(ascii: "0") { index += 1 } else { skipDigits() }
        var integral = true
        if current == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard try skipRequiredDigits() else { throw error("invalid number") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard try skipRequiredDigits() else { throw error("invalid number") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let value = Int(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { return .outOfRange(text) }
        return .double(value)
    }

    private mutating func skipDigits() {
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
    }

    private mutating func skipRequiredDigits() throws(JSONSyntaxError) -> Bool {
        let start = index
        skipDigits()
        return index > start
    }
}
