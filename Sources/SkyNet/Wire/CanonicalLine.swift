import Foundation

/// The two lines that make up nearly all traffic, `scan` requests and `result` replies,
/// decoded without the general JSON parser when they are written exactly as our own encoder
/// writes them (the parser's dictionary of values was the largest user-space cost of a
/// node's request and of a coordinator's reply).
///
/// Safe by construction: a line is taken here only if encoding the decoded message again
/// gives back the very same bytes. Such a line is one the general decoder reads the same way
/// (our lines round-trip), so the fast path changes no answer; any other line (other field
/// order, spaces, escapes, a number written another way) returns nil and goes the long way.
enum CanonicalLine {
    /// `{"type":"result","id":N,"task":"UUID","result":"TEXT"}` with TEXT needing no escape.
    static func result(_ line: Data) -> Reply? {
        line.withUnsafeBytes { bytes -> Reply? in
            var cursor = Cursor(bytes)
            guard cursor.skip(#"{"type":"result","id":"#), let id = cursor.integer(),
                  cursor.skip(#","task":""#), let task = cursor.uuid(),
                  cursor.skip(#"","result":""#), let result = cursor.plainStringToEnd(closing: #""}"#)
            else { return nil }
            let reply = Reply.result(id: id, task: task, result: result)
            return reply.line.dropLast().elementsEqual(bytes) ? reply : nil
        }
    }

    /// `{"type":"scan","id":N,"task":{"id":"UUID","input":N,"duration":D}}`, with or without
    /// a `"timeout":T` after the duration, and a duration and timeout the protocol accepts.
    static func scan(_ line: Data) -> Request? {
        line.withUnsafeBytes { bytes -> Request? in
            var cursor = Cursor(bytes)
            guard cursor.skip(#"{"type":"scan","id":"#), let id = cursor.integer(),
                  cursor.skip(#","task":{"id":""#), let taskID = cursor.uuid(),
                  cursor.skip(#"","input":"#), let input = cursor.integer(),
                  cursor.skip(#","duration":"#), let duration = cursor.number(),
                  ScanTask.isValidDuration(duration)
            else { return nil }
            var timeout: Double?
            if cursor.skip(#","timeout":"#) {
                guard let value = cursor.number(), ScanTask.isValidTimeout(value) else { return nil }
                timeout = value
            }
            guard cursor.skip("}}"), cursor.atEnd else { return nil }
            let request = Request.scan(id: id, task: ScanTask(id: taskID, input: input, duration: duration, timeout: timeout))
            return request.line.dropLast().elementsEqual(bytes) ? request : nil
        }
    }

    /// Reads a line from the front; every read either consumes what it matched or fails.
    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        /// Consumes `text` if the line goes on with it.
        mutating func skip(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.count - position >= count else { return false }
            for index in 0..<count where bytes[position + index] != text.utf8Start[index] { return false }
            position += count
            return true
        }

        /// An optional minus and 1 to 18 digits (any Int the encoder writes is re-checked).
        mutating func integer() -> Int? {
            var value = 0, digits = 0
            let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
            if negative { position += 1 }
            while position < bytes.count, (48...57).contains(bytes[position]), digits < 18 {
                value = value * 10 + Int(bytes[position] - 48)
                digits += 1
                position += 1
            }
            guard digits > 0 else { return nil }
            return negative ? -value : value
        }

        /// A number's text up to the next `,` or `}`, as `Double` reads it.
        mutating func number() -> Double? {
            let start = position
            while position < bytes.count, bytes[position] != UInt8(ascii: ","), bytes[position] != UInt8(ascii: "}") {
                position += 1
            }
            guard position > start, position - start <= 32 else { return nil }
            return Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
        }

        /// 36 characters of a UUID.
        mutating func uuid() -> UUID? {
            guard bytes.count - position >= 36 else { return nil }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<position + 36]), as: UTF8.self)
            position += 36
            return UUID(wireText: text)
        }

        /// The rest of the line up to `closing`, which must end it: text with nothing to
        /// unescape (no quote, backslash or control character) in valid UTF-8.
        mutating func plainStringToEnd(closing: StaticString) -> String? {
            let tail = closing.utf8CodeUnitCount
            guard bytes.count - position >= tail else { return nil }
            let end = bytes.count - tail
            for index in position..<end {
                let byte = bytes[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return nil }
            }
            let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self)
            position = end
            guard text != nil, skip(closing), atEnd else { return nil }
            return text
        }
    }
}
