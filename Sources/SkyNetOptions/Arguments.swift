/// Bad usage: printed as `error: …` with the command's usage line; exit status 2.
package struct UsageError: Error, CustomStringConvertible {
    package let description: String
    package init(_ message: String) { description = message }
}

/// The options of one command line, parsed against the options the command knows (its `OptionTable`).
///
/// Accepts `--name value`, `--name=value` and bare `--flag`. Every value is checked when the
/// command reads it, against the range its table entry gives, so errors name the option and
/// what was wrong with it. An option is given once, unless it is one of the `repeating` ones
/// (`--job a=… --job b=…`).
package struct Arguments {
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []
    private let kinds: [String: OptionValue]
    /// Each option's value when not given, as its table declares it.
    private let defaults: [String: String]

    package init(_ arguments: [String], values kinds: [String: OptionValue], repeating: Set<String>,
                 defaults: [String: String] = [:]) throws(UsageError) {
        self.kinds = kinds
        self.defaults = defaults
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw UsageError("unexpected argument '\(argument)'")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            switch kinds[name] {
            case .flag?:
                if inlineValue != nil { throw UsageError("option '--\(name)' takes no value") }
                flags.insert(name)
            case _?:
                guard let value = inlineValue ?? rest.popFirst() else {
                    throw UsageError("option '--\(name)' needs a value")
                }
                if values[name] != nil, !repeating.contains(name) { throw UsageError("option '--\(name)' is given twice") }
                values[name, default: []].append(value)
            case nil:
                let suggestion = closest(to: name, among: Set(kinds.keys))
                    .map { ". Did you mean '--\($0)'?" } ?? ""
                throw UsageError("unknown option '--\(name)'\(suggestion)")
            }
        }
    }

    package func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of an option given once (the last one of a repeating option).
    package func string(_ name: String) -> String? { values[name]?.last }

    /// The value of an option given once, else its table's default.
    package func stringOrDefault(_ name: String) -> String? { string(name) ?? defaults[name] }

    /// Every value of a repeating option, in the order given.
    package func strings(_ name: String) -> [String] { values[name] ?? [] }

    /// A whole number in the range of the option's `.count` entry; not given: its table's default.
    package func int(_ name: String) throws(UsageError) -> Int {
        try int(name, default: nil)
    }

    /// As `int(_:)`, with `fallback` when not given (a default that depends on other options).
    package func int(_ name: String, default fallback: Int?) throws(UsageError) -> Int {
        guard let text = string(name) ?? fallback.map(String.init) ?? tableDefault(name) else { preconditionFailure("--\(name) has no default") }
        guard case .count(let range) = kinds[name] else { preconditionFailure("--\(name) is not a count in its table") }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError("option '--\(name)' wants a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// A number of bytes: plain (`262144`) or with a binary suffix (`256K`, `1M`, `1G`, `1T`);
    /// not given: its table's default.
    package func bytes(_ name: String) throws(UsageError) -> Int {
        try bytes(name, default: nil)
    }

    /// As `bytes(_:)`, with `fallback` when not given.
    package func bytes(_ name: String, default fallback: Int?) throws(UsageError) -> Int {
        guard let text = string(name) ?? fallback.map(String.init) ?? tableDefault(name) else { preconditionFailure("--\(name) has no default") }
        guard case .bytes(let range) = kinds[name] else { preconditionFailure("--\(name) is not bytes in its table") }
        let units: [Character: Int] = ["K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20, "G": 1 << 30, "g": 1 << 30,
                                       "T": 1 << 40, "t": 1 << 40]
        let unit = text.last.flatMap { units[$0] }
        let digits = unit == nil ? Substring(text) : text.dropLast()
        guard let number = Int(digits), number >= 0, case let (value, overflow) = number.multipliedReportingOverflow(by: unit ?? 1),
              !overflow, range.contains(value) else {
            throw UsageError("option '--\(name)' wants a number of bytes in \(range.lowerBound)...\(range.upperBound) "
                + "(a K, M, G or T suffix counts 1024, 1048576, … bytes), not '\(text)'")
        }
        return value
    }

    /// A number of seconds in the range of the option's `.seconds` entry; not given: its table's default.
    package func double(_ name: String) throws(UsageError) -> Double {
        try double(name, default: nil)
    }

    /// As `double(_:)`, with `fallback` when not given.
    package func double(_ name: String, default fallback: Double?) throws(UsageError) -> Double {
        guard let text = string(name) ?? fallback.map({ "\($0)" }) ?? tableDefault(name) else { preconditionFailure("--\(name) has no default") }
        guard case .seconds(let range) = kinds[name] else { preconditionFailure("--\(name) is not seconds in its table") }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError("option '--\(name)' wants a number of seconds in \(range.lowerBound.formatted)...\(range.upperBound.formatted), not '\(text)'")
        }
        return value
    }

    /// The default the option's table declares, as written.
    private func tableDefault(_ name: String) -> String? { defaults[name] }

    package func optionalDouble(_ name: String) throws(UsageError) -> Double? {
        values[name] == nil ? nil : try double(name, default: nil)
    }
}

/// The candidate nearest to `word` by edit distance, when it is near enough to be a typo.
package func closest(to word: String, among candidates: Set<String>) -> String? {
    // Among equally near candidates, one that `word` begins (`stat` → `status`) wins.
    let scored = candidates.map { ($0, editDistance(word, $0), $0.hasPrefix(word) ? 0 : 1) }
        .sorted { ($0.1, $0.2, $0.0) < ($1.1, $1.2, $1.0) }
    guard let best = scored.first, best.1 <= max(2, word.count / 3) else { return nil }
    return best.0
}

private func editDistance(_ a: String, _ b: String) -> Int {
    let b = Array(b)
    var previous = Array(0...b.count)
    for (i, x) in a.enumerated() {
        var current = [i + 1]
        for (j, y) in b.enumerated() {
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
        }
        previous = current
    }
    return previous[b.count]
}

extension Double {
    /// Without a trailing ".0" for whole numbers.
    package var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}
