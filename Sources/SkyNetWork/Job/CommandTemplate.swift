/// A job's command line, split into words the way a POSIX shell splits them, but never run by
/// one: `sha256sum {}` or `convert {} 'out/{#}.png'`.
///
/// Quoting works as in `sh`: single quotes keep everything, double quotes keep everything but
/// `\"`, `\\`, `\$` and `` \` ``, and a backslash outside quotes keeps the next character. What
/// only a shell could do (pipes, redirections, `;`, `&`, `$VAR`, `$(…)`, backquotes, globs such
/// as `*.jpg`, a leading `~`) is refused
/// rather than passed on as a literal word, so a command never means something else than it
/// seems to.
///
/// GNU parallel's replacement strings stand for parts of the task, anywhere in a word
/// (`convert {} {.}.png`), with GNU parallel's meaning to the byte (`Placeholder`): `{}` the
/// input, `{.}` the input without its extension, `{/}` its base name, `{//}` its directory,
/// `{/.}` its base name without extension, `{#}` the sector number and `{%}` the job slot on
/// the system running the task (1...capacity, distinct among the tasks running there at once).
/// A placeholder is never split by quotes or a backslash: `\{.}` is a literal `{.}`, and any
/// other `{…}` (`{x}`, `{1}`) is plain text. Without a placeholder the input is appended as
/// the last word.
package struct CommandTemplate: Sendable, Equatable, CustomStringConvertible {
    /// A command that cannot be split, saying what is wrong and what to write instead.
    package struct ParseError: Error, CustomStringConvertible, Equatable, Sendable {
        package let description: String

        package init(description: String) {
            self.description = description
        }
    }

    enum Piece: Sendable, Equatable {
        case text(String)
        case placeholder(Placeholder)
    }

    /// The command as the operator wrote it.
    package let text: String
    let words: [[Piece]]
    let hasPlaceholder: Bool

    package var description: String { text }

    /// The program to run: the first word (a name looked up in PATH, or a path).
    package var program: String { words.first.map { Self.join($0, input: "", sector: 0, slot: 1) } ?? "" }

    package init(_ command: String) throws(ParseError) {
        var splitter = WordSplitter()
        for character in command { try splitter.take(character) }
        let words = try splitter.finish()
        guard let first = words.first else {
            throw ParseError(description: "the command is empty: name a program, e.g. 'sha256sum {}'")
        }
        guard first.allSatisfy(Self.isText) else {
            throw ParseError(description: "the program must be named in the command, not given by a placeholder: '\(command)'")
        }
        text = command
        self.words = words
        hasPlaceholder = words.joined().contains { !Self.isText($0) }
    }

    /// Plain words split as a command's are (quotes, backslashes; shell syntax refused), with
    /// `{}` as literal text and a leading unquoted `~/` (or a lone `~`) read as `home`: the
    /// words of `--ssh-command 'ssh -i ~/.ssh/ci'`, never run by a shell.
    package static func words(_ text: String, home: String) throws(ParseError) -> [String] {
        var splitter = WordSplitter(home: home)
        for character in text { try splitter.take(character) }
        return try splitter.finish().map { word in join(word, input: "", sector: 0, slot: 1) }
    }

    /// Whether `other` makes the same argument vector for every input, however either is
    /// quoted or spaced: `'echo'  "{}"`, `echo {}` and `echo` (the input goes last) do.
    package func runsLike(_ other: CommandTemplate) -> Bool {
        wordsWithInput == other.wordsWithInput
    }

    /// The words, with the input as the last one when no placeholder places it.
    private var wordsWithInput: [[Piece]] { hasPlaceholder ? words : words + [[.placeholder(.input)]] }

    /// The argument vector for one task (program first), running in job slot `slot`.
    package func arguments(input: String, sector: Int, slot: Int = 1) -> [String] {
        var arguments = words.map { Self.join($0, input: input, sector: sector, slot: slot) }
        if !hasPlaceholder { arguments.append(input) }
        return arguments
    }

    private static func isText(_ piece: Piece) -> Bool {
        if case .text = piece { true } else { false }
    }

    private static func join(_ pieces: [Piece], input: String, sector: Int, slot: Int) -> String {
        pieces.map { piece in
            switch piece {
            case .text(let text): text
            case .placeholder(let placeholder): placeholder.value(input: input, sector: sector, slot: slot)
            }
        }.joined()
    }
}

/// Splits a command into words of text and placeholders, one character at a time.
struct WordSplitter {
    private enum Quote { case none, single, double }

    private var words: [[CommandTemplate.Piece]] = []
    private var pieces: [CommandTemplate.Piece] = []
    private var text = ""
    /// A word has begun (also when it is empty so far, as after `''`).
    private var inWord = false
    private var quote = Quote.none
    private var escaped = false
    /// Characters of a possible placeholder seen so far: `{`, `{/`, `{//` and the like.
    private var brace = ""
    /// Plain words (`CommandTemplate.words`): no placeholders, and a leading `~` is `home`.
    private let home: String?
    /// An unquoted `~` began the word: `home` if a `/` or the word's end follows.
    private var tilde = false

    /// A splitter of a command template; with `home`, of plain words.
    init(home: String? = nil) {
        self.home = home
    }

    mutating func take(_ character: Character) throws(CommandTemplate.ParseError) {
        if tilde {
            tilde = false
            guard character == "/" || character == " " || character == "\t" || character == "\n", let home else {
                throw shellOnly("~")  // ~user: another user's home, known only to a shell
            }
            text += home
        }
        if home != nil, quote == .none, character == "~", !inWord {
            inWord = true
            tilde = true
            return
        }
        if !brace.isEmpty {
            if try continuePlaceholder(with: character) { return }
        }
        if escaped {
            escaped = false
            if quote == .double, !"$`\"\\\n".contains(character) { text.append("\\") }
            if character != "\n" { text.append(character) }
            return
        }
        switch (quote, character) {
        case (.single, "'"): quote = .none
        case (.single, "{"): beginPlaceholder()
        case (.single, _): appendLiteral(character)
        case (.double, "\""): quote = .none
        case (.double, "\\"): escaped = true
        case (.double, "$"), (.double, "`"): throw shellOnly(character)
        case (.double, "{"): beginPlaceholder()
        case (.double, _): appendLiteral(character)
        case (.none, "'"): inWord = true; quote = .single
        case (.none, "\""): inWord = true; quote = .double
        case (.none, "\\"): inWord = true; escaped = true
        case (.none, "{"): beginPlaceholder()
        case (.none, " "), (.none, "\t"), (.none, "\n"): endWord()
        case (.none, _) where "|&;<>()$`".contains(character): throw shellOnly(character)
        case (.none, "#") where !inWord: throw shellOnly(character)  // a comment, to a shell
        case (.none, "~") where !inWord: throw shellOnly(character)  // a home directory
        case (.none, "*"), (.none, "?"), (.none, "["): throw shellOnly(character)  // a glob
        case (.none, _): appendLiteral(character)
        }
    }

    mutating func finish() throws(CommandTemplate.ParseError) -> [[CommandTemplate.Piece]] {
        if tilde, let home {
            text += home
            tilde = false
        }
        if !brace.isEmpty {
            text += brace
            brace = ""
        }
        if escaped, quote == .none {
            throw CommandTemplate.ParseError(description: "the command ends in a lone backslash")
        }
        switch quote {
        case .single: throw CommandTemplate.ParseError(description: "a single quote (') is never closed")
        case .double: throw CommandTemplate.ParseError(description: "a double quote (\") is never closed")
        case .none: break
        }
        endWord()
        return words
    }

    private mutating func appendLiteral(_ character: Character) {
        inWord = true
        text.append(character)
    }

    private mutating func beginPlaceholder() {
        if home != nil { return appendLiteral("{") }  // plain words have no placeholders
        inWord = true
        brace = "{"
    }

    /// Whether `character` was used up by a placeholder in progress (`{`, `{/`); when it
    /// turns out to be plain text, that text is kept and `character` is handled as usual
    /// (what was kept holds no `{` after the first, so no placeholder can start inside it).
    private mutating func continuePlaceholder(with character: Character) throws(CommandTemplate.ParseError) -> Bool {
        let candidate = brace + String(character)
        if let placeholder = CommandTemplate.Placeholder(rawValue: candidate) {
            if !text.isEmpty { pieces.append(.text(text)) }
            text = ""
            pieces.append(.placeholder(placeholder))
            brace = ""
            return true
        }
        if CommandTemplate.Placeholder.isBeginning(candidate) {
            brace = candidate
            return true
        }
        text += brace
        brace = ""
        return false
    }

    private mutating func endWord() {
        guard inWord else { return }
        if !text.isEmpty || pieces.isEmpty { pieces.append(.text(text)) }
        words.append(pieces)
        pieces = []
        text = ""
        inWord = false
    }

    /// `home` is given for the words of `--ssh-command`, which are no job's command.
    private func shellOnly(_ character: Character) -> CommandTemplate.ParseError {
        guard home == nil else {
            return CommandTemplate.ParseError(description: """
                '\(character)' means something only to a shell, and the ssh command is never run by one: \
                quote it ('\(character)') to pass it to ssh as text
                """)
        }
        return CommandTemplate.ParseError(description: """
            '\(character)' means something only to a shell, and a job's command is never run by one: \
            quote it ('\(character)') to pass it as text, or put a pipeline or redirection in a script \
            and name the script as the command
            """)
    }
}
