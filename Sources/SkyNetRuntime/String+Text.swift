extension String {
    /// The text with every control character (C0, DEL and C1, ESC and BEL among them) written
    /// as `\x1b`: text from outside (a job's stderr, a peer's name or job summary) shown on a
    /// terminal can then never clear the screen, move the cursor or retitle the window.
    /// Everything else is kept as it is, backslashes too: this is for people to read, and
    /// `--json` carries the exact text for programs.
    package var escapingControlCharacters: String {
        // Most text has none: C0 and DEL are single bytes, C1 starts with 0xC2 in UTF-8.
        guard utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 }) else { return self }
        var escaped = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            guard scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) else {
                escaped.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            escaped.append(contentsOf: ("\\x" + (hex.count < 2 ? "0" : "") + hex).unicodeScalars)
        }
        return String(escaped)
    }
}

extension StringProtocol {
    /// Without the characters at either end that `trimmed` matches: `trimming(\.isWhitespace)`.
    package func trimming(_ trimmed: (Character) -> Bool) -> String {
        String(drop(while: trimmed).reversed().drop(while: trimmed).reversed())
    }
}

extension String {
    /// `value` written by C's `printf` rules for `format`, one conversion for a `Double`
    /// ("%.2f", "%g", "%.0f%%"): the numbers of summaries and logs, byte for byte what
    /// Foundation's `String(format:)` wrote, without pulling Foundation (and ICU) in.
    package init(cFormat format: String, _ value: Double) {
        var buffer = [CChar](repeating: 0, count: 64)
        let needed = Int(withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) })
        if needed >= buffer.count {  // a huge number in %f: measure, then write again
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
