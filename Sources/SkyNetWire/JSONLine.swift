import SkyNetRuntime

/// Builds one JSON object on one line, newline included: the wire's unit of sending.
///
/// Hand-written because the messages are small and flat; keys are written as given and
/// string values escaped, so the line never holds a raw newline.
package struct JSONLine: Sendable {
    private var bytes: [UInt8]
    private var empty = true

    /// Room for a usual message line (a `scan` request is about 130 bytes), so that it takes
    /// one allocation, not one for every doubling of its buffer.
    package static let usualSize = 160

    /// A message: an object whose first field is its `type`.
    package init(type: String) {
        self.init(capacity: Self.usualSize)
        add("type", type)
    }

    /// A message that answers or names a request: `type`, then `id`.
    package init(type: String, id: Int) {
        self.init(capacity: Self.usualSize)
        add("type", type)
        add("id", id)
    }

    /// A nested object, for `add(_:object:)`.
    package init() {
        self.init(capacity: 64)
    }

    /// An object with room for `capacity` bytes, for a line whose size is known (a big result
    /// then takes one allocation, not a doubling series).
    package init(capacity: Int) {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(max(16, capacity))
    }

    package mutating func add(_ key: String, _ value: String) {
        self.key(key)
        Self.appendString(value, to: &bytes)
    }

    package mutating func add(_ key: String, _ value: Int) {
        self.key(key)
        Self.appendInteger(value, to: &bytes)
    }

    package mutating func add(_ key: String, _ value: Double) {
        self.key(key)
        Self.appendNumber(value, to: &bytes)
    }

    package mutating func add(_ key: String, _ value: Bool) {
        self.key(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    package mutating func add(_ key: String, object: JSONLine) {
        self.key(key)
        bytes.append(contentsOf: object.bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// An array of objects.
    package mutating func add(_ key: String, objects: [JSONLine]) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        for (index, object) in objects.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: object.bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// An array of whole numbers.
    package mutating func add(_ key: String, integers: [Int]) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        bytes.append(contentsOf: integers.map(String.init).joined(separator: ",").utf8)
        bytes.append(UInt8(ascii: "]"))
    }

    /// An array of strings.
    package mutating func add(_ key: String, strings: [String]) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            Self.appendString(string, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A string that needs no escape (base64, hex), its characters appended by `write`
    /// straight into the line.
    package mutating func add(_ key: String, rawString write: (inout [UInt8]) -> Void) {
        self.key(key)
        bytes.append(UInt8(ascii: "\""))
        write(&bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A UUID in the wire's text form (`UUID.appendWireText`), written straight into the line.
    package mutating func add(_ key: String, uuid: UUID) {
        add(key, rawString: uuid.appendWireText(to:))
    }

    /// A field whose value is any JSON value (a call's arguments, its result).
    package mutating func add(_ key: String, value: JSONValue) {
        self.key(key)
        value.write(to: &bytes)
    }

    /// `null`: a value not known yet.
    package mutating func addNull(_ key: String) {
        self.key(key)
        bytes.append(contentsOf: "null".utf8)
    }

    /// The object without a newline (for a nested use such as an event-stream frame).
    package var object: [UInt8] { bytes + [UInt8(ascii: "}")] }

    /// The finished line: the object and its newline.
    package var line: [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(bytes.count + 2)
        line.append(contentsOf: bytes)
        line.append(UInt8(ascii: "}"))
        line.append(UInt8(ascii: "\n"))
        return line
    }

    /// The finished line, made in place from this object's own buffer (no copy of a big
    /// value); the object is spent.
    package consuming func takeLine() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private mutating func key(_ key: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        Self.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// An integer's decimal digits, as `String(value)` writes them, with no string in between.
    static func appendInteger(_ value: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 1
        var scale: UInt = 1
        while magnitude / scale >= 10 {
            scale *= 10
            digits += 1
        }
        for _ in 0..<digits {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude / scale))
            magnitude %= scale
            scale /= 10
        }
    }

    /// A number as `Double`'s description writes it (`1.0`, `0.25`, `1e-05`); 0 for what JSON
    /// cannot write (infinities and NaN).
    static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else { return bytes.append(UInt8(ascii: "0")) }
        bytes.append(contentsOf: value.description.utf8)
    }

    static func appendString(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        // Over the string's own UTF-8 (a native string is contiguous): the runs that need no
        // escape, nearly always the whole string, are copied whole (a hot path in profiles).
        text.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            var run = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                run = index + 1
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
                case 10: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
                case 13: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
                case 9: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
