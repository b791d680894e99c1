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
