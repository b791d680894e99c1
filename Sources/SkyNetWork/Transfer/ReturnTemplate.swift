/// A `--return` template: one word of text and replacement strings naming the file a task
/// leaves behind (`{.}.png`, `{}.gz`, `out/{#}.txt`), expanded on the input as a job's command
/// is (GNU parallel's meaning to the byte). No `{%}`: the slot is the node's choice, and the
/// file's name must not depend on it.
package struct ReturnTemplate: Sendable, Equatable, CustomStringConvertible {
    /// The template as written.
    package let text: String
    private let pieces: [CommandTemplate.Piece]

    package init(_ text: String) throws(CommandTemplate.ParseError) {
        var splitter = WordSplitter()
        for character in text { try splitter.take(character) }
        let words = try splitter.finish()
        guard let word = words.first, !(word.count == 1 && word.first == .text("")) else {
            throw CommandTemplate.ParseError(description: "a --return template names a file, e.g. '{.}.png': it is empty")
        }
        guard words.count == 1 else {
            throw CommandTemplate.ParseError(description: "a --return template is one word (one file), not \(words.count): '\(text)'")
        }
        guard !word.contains(.placeholder(.slot)) else {
            throw CommandTemplate.ParseError(description: "{%} (the job slot) cannot name a returned file: the slot is the node's choice ('\(text)')")
        }
        self.text = text
        pieces = word
    }

    /// The path this template names for a task with `input` and `sector`.
    package func path(input: String, sector: Int) -> String {
        pieces.map { piece in
            switch piece {
            case .text(let text): text
            case .placeholder(let placeholder): placeholder.value(input: input, sector: sector, slot: 1)
            }
        }.joined()
    }

    package var description: String { text }
}
