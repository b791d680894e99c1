/// What an option takes, and the values parsing accepts: help states the same range.
package enum OptionValue: Sendable {
    case flag
    case text
    case count(ClosedRange<Int>)
    /// Bytes, plain or with a K, M, G or T suffix.
    case bytes(ClosedRange<Int>)
    case seconds(ClosedRange<Double>)

    /// The accepted range as help writes it: `0...64`, `1...512K`, `0.001...60`.
    package var range: String {
        switch self {
        case .flag, .text: ""
        case .count(let range): "\(range.lowerBound)...\(range.upperBound)"
        case .bytes(let range): "\(Self.bytes(range.lowerBound))...\(Self.bytes(range.upperBound))"
        case .seconds(let range): "\(range.lowerBound.formatted)...\(range.upperBound.formatted)"
        }
    }

    /// `count` with the largest binary suffix that divides it: `512K`, `1G`, `1T`.
    private static func bytes(_ count: Int) -> String {
        guard count > 0 else { return "\(count)" }
        let suffix = [(40, "T"), (30, "G"), (20, "M"), (10, "K")].first { count % (1 << $0.0) == 0 }
        return suffix.map { "\(count >> $0.0)\($0.1)" } ?? "\(count)"
    }
}

/// One option of a command, declared once: parsing, the usage line, `help` and the command
/// line of a spawned node are all derived from it.
package struct Option<Command>: Sendable {
    package let name: String
    package let value: OptionValue
    package let repeats: Bool
    /// Its text in the usage line (`[--total 20]`) and that line's number; nil when another
    /// option's text holds it (`[--journal FILE [--resume]]`) or it is hidden.
    package let usage: String?
    package let line: Int
    /// The group of `help` it is listed in (the table's `sections`).
    package let section: Int
    /// Its entries in `help`: what follows the name (`N`, `FILE`) and its lines, in which
    /// `<range>` stands for the values parsing accepts. None: a hidden option.
    private(set) var help: [(label: String, lines: [String])]
    /// The arguments of `skynet node` that give a spawned node this option, from the parsed command.
    package let spawned: (@Sendable (Command) -> [String])?
    /// Its value when not given, as a user would write it (`20`, `1G`, `1.0`): parsed by the
    /// same code as a given value, and written for `<default>` in its usage and help.
    package let fallback: String?

    /// `label` nil: hidden from usage and help.
    package init(_ name: String, _ value: OptionValue, default fallback: String? = nil, repeats: Bool = false, usage: String?,
                 line: Int = 0, section: Int = 0, _ label: String? = nil, _ lines: String...,
                 spawned: (@Sendable (Command) -> [String])? = nil) {
        (self.name, self.value, self.fallback, self.repeats, self.line, self.section, self.spawned)
            = (name, value, fallback, repeats, line, section, spawned)
        self.usage = usage.map { text in fallback.map { text.replacing("<default>", with: $0) } ?? text }
        help = label.map { [($0, lines)] } ?? []
    }

    /// This option with a second entry in `help` (`--job NAME`, then `--job NAME=COMMAND`).
    package func and(_ label: String, _ lines: String...) -> Self {
        var option = self
        option.help.append((label, lines))
        return option
    }
}

/// Every option of one command, in the order `help` lists them.
package struct OptionTable<Command>: Sendable {
    package let options: [Option<Command>]
    /// `usage: skynet scan`: the usage line's start; its next lines are indented under the first option.
    package let usagePrefix: String
    /// The titles of `help`'s groups of options (`options:`); "" for a group without one.
    package var sections = ["options:"]
    /// The width of the column of names in `help`.
    package var column = 21

    package init(options: [Option<Command>], usagePrefix: String, sections: [String] = ["options:"], column: Int = 21) {
        self.options = options
        self.usagePrefix = usagePrefix
        self.sections = sections
        self.column = column
    }

    /// The usage line: each option's text, line by line.
    package var usage: String {
        let lines = Dictionary(grouping: options.filter { $0.usage != nil }, by: \.line).sorted { $0.key < $1.key }
        let indent = String(repeating: " ", count: usagePrefix.count + 1)
        return usagePrefix + " " + lines.map { $0.value.compactMap(\.usage).joined(separator: " ") }.joined(separator: "\n" + indent)
    }

    /// The options part of `help`: each group under its title, an entry a name and its text.
    package var help: String {
        let indent = String(repeating: " ", count: column + 2)
        return sections.indices.map { section in
            let entries = options.filter { $0.section == section }.flatMap { option in
                option.help.map { entry in
                    let name = "--\(option.name)" + (entry.label.isEmpty ? "" : " \(entry.label)")
                    let text = entry.lines.joined(separator: "\n" + indent).replacing("<range>", with: option.value.range)
                        .replacing("<default>", with: option.fallback ?? "")
                    return "  " + (name.count < column ? name + String(repeating: " ", count: column - name.count) : name + "\n" + indent) + text
                }
            }
            return ((sections[section].isEmpty ? [] : [sections[section]]) + entries).joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    /// The arguments that give a spawned `skynet node` what `command` was given (but the
    /// `excluded` options').
    package func spawnedArguments(for command: Command, excluding excluded: Set<String> = []) -> [String] {
        options.filter { !excluded.contains($0.name) }.flatMap { $0.spawned?(command) ?? [] }
    }

    /// Parses `arguments` against these options.
    package func parse(_ arguments: [String]) throws(UsageError) -> Arguments {
        try Arguments(arguments, values: Dictionary(uniqueKeysWithValues: options.map { ($0.name, $0.value) }),
                      repeating: Set(options.filter(\.repeats).map(\.name)),
                      defaults: Dictionary(uniqueKeysWithValues: options.compactMap { option in option.fallback.map { (option.name, $0) } }))
    }
}
