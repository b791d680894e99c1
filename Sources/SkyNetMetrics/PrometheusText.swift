/// Writes metric families in Prometheus's text exposition format, version 0.0.4: one `# HELP`
/// and one `# TYPE` line per family, its samples right after them, label values and help
/// escaped. Knows no network: the servers call `render` when a scrape comes.
package enum PrometheusText {
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text of `families`. Families given twice under one name are merged at the first
    /// one's place (their samples in the order given), so every name has one HELP and one
    /// TYPE and its samples are contiguous.
    package static func render(_ families: [MetricFamily]) -> [UInt8] {
        var order: [String] = []
        var merged: [String: MetricFamily] = [:]
        for family in families {
            precondition(isValidName(family.name), "metric name \(family.name) is not a Prometheus name")
            if var first = merged[family.name] {
                precondition(first.kind == family.kind && first.help == family.help, "metric \(family.name) given twice, differently")
                first.samples += family.samples
                first.histograms += family.histograms
                merged[family.name] = first
            } else {
                order.append(family.name)
                merged[family.name] = family
            }
        }
        var text = ""
        for name in order {
            guard let family = merged[name] else { continue }
            write(family, to: &text)
        }
        return Array(text.utf8)
    }

    private static func write(_ family: MetricFamily, to text: inout String) {
        text += "# HELP \(family.name) \(escapedHelp(family.help))\n"
        text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
        for sample in family.samples {
            text += "\(family.name)\(labelText(sample.labels)) \(format(sample.value))\n"
        }
        for histogram in family.histograms {
            let counts = histogram.counts
            let cumulative = counts.cumulative
            for (index, bound) in counts.bounds.enumerated() {
                text += "\(family.name)_bucket\(labelText(histogram.labels + [("le", format(bound))])) \(cumulative[index])\n"
            }
            text += "\(family.name)_bucket\(labelText(histogram.labels + [("le", "+Inf")])) \(counts.count)\n"
            text += "\(family.name)_sum\(labelText(histogram.labels)) \(format(counts.sum))\n"
            text += "\(family.name)_count\(labelText(histogram.labels)) \(counts.count)\n"
        }
    }

    /// `{a="x",b="y"}`, or nothing without labels.
    static func labelText(_ labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return "" }
        let pairs = labels.map { name, value in
            precondition(isValidName(name) && !name.contains(":"), "label name \(name) is not a Prometheus label name")
            return "\(name)=\"\(escapedLabelValue(value))\""
        }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    /// HELP text: `\` and line feeds escaped.
    static func escapedHelp(_ text: String) -> String {
        escaped(text, quotes: false)
    }

    /// A label value: `\`, `"` and line feeds escaped.
    static func escapedLabelValue(_ text: String) -> String {
        escaped(text, quotes: true)
    }

    private static func escaped(_ text: String, quotes: Bool) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A sample value: an integer without `.0`, else the shortest text that reads back the
    /// same; `+Inf`, `-Inf`, `NaN`.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"  // Swift's description is the shortest round-trip form
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first else { return false }
        func isLetter(_ c: UInt8) -> Bool { (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c == 95 || c == 58 }
        return isLetter(first) && name.utf8.allSatisfy { isLetter($0) || ($0 >= 48 && $0 <= 57) }
    }
}
