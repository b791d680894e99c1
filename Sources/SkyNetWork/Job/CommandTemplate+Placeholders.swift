extension CommandTemplate {
    /// A replacement string of GNU parallel, as a job's command may hold it anywhere in a word.
    ///
    /// The four that take the input apart do exactly what GNU parallel's do (its `--rpl`
    /// table: Perl's `s:\.[^/.]*$::`, `s:.*/::` and `File::Basename::dirname`), quirks
    /// included, so a command moves between the two tools unchanged: for `photos/a.b.jpg`
    /// they give `photos/a.b`, `a.b.jpg`, `photos` and `a.b`; for `a/` they give `a/`, ``,
    /// `.` and ``; for `.hidden`, ``, `.hidden`, `.` and ``; for `/`, `/`, ``, `/` and ``.
    /// The input is taken apart as bytes at `/`, `.` and newlines only, so UTF-8 stays whole.
    enum Placeholder: String, CaseIterable, Sendable {
        /// The input as it is.
        case input = "{}"
        /// The input without its extension: from its last `.` on, unless a `/` follows it.
        case withoutExtension = "{.}"
        /// What follows the input's last `/` (the whole input when it has none; see `baseName`).
        case baseName = "{/}"
        /// The input's directory as Perl's `dirname` gives it (`.` when it has no `/`).
        case directory = "{//}"
        /// The base name without its extension.
        case baseNameWithoutExtension = "{/.}"
        /// The task's sector number.
        case sector = "{#}"
        /// The job slot the task runs in on its system, 1...capacity.
        case slot = "{%}"

        /// Whether `text` begins some placeholder but is not yet one: `{`, `{/`, `{//`.
        static func isBeginning(_ text: String) -> Bool {
            allCases.contains { $0.rawValue.count > text.count && $0.rawValue.hasPrefix(text) }
        }

        /// What the placeholder stands for in a task with `input`, `sector` and `slot`.
        func value(input: String, sector: Int, slot: Int) -> String {
            switch self {
            case .input: input
            case .withoutExtension: Self.text(Self.removingExtension(Array(input.utf8)))
            case .baseName: Self.text(Self.baseName(Array(input.utf8)))
            case .directory: Self.text(Self.directory(Array(input.utf8)))
            case .baseNameWithoutExtension: Self.text(Self.removingExtension(Self.baseName(Array(input.utf8))))
            case .sector: String(sector)
            case .slot: String(slot)
            }
        }

        private static let slash = UInt8(ascii: "/"), dot = UInt8(ascii: "."), newline = UInt8(ascii: "\n")

        /// Cut only at ASCII bytes, valid UTF-8 stays valid; invalid stays as it came.
        private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

        /// `s:\.[^/.]*$::`: the last `.` and what follows, when no `/` follows it. (Perl's `$`
        /// may also match before a final newline, but `[^/.]*` takes that newline anyway.)
        static func removingExtension(_ bytes: [UInt8]) -> [UInt8] {
            guard let dot = bytes.lastIndex(of: dot), !bytes[dot...].contains(slash) else { return bytes }
            return Array(bytes[..<dot])
        }

        /// `s:.*/::`: Perl's `.` stops at a newline, so what goes is the first line holding a
        /// `/`, from its start to its last `/` (for an input of one line: up to the last `/`).
        static func baseName(_ bytes: [UInt8]) -> [UInt8] {
            guard let first = bytes.firstIndex(of: slash) else { return bytes }
            let lineStart = bytes[..<first].lastIndex(of: newline).map { $0 + 1 } ?? 0
            let lineEnd = bytes[first...].firstIndex(of: newline) ?? bytes.endIndex
            let last = bytes[first..<lineEnd].lastIndex(of: slash) ?? first
            return Array(bytes[..<lineStart] + bytes[(last + 1)...])
        }

        /// Perl's `File::Basename::dirname` on Unix: the part up to the last `/` (`./` when
        /// there is none), its trailing slashes removed but never its first character; when
        /// nothing followed that `/` (`a/b/`), the same once more on that part.
        static func directory(_ bytes: [UInt8]) -> [UInt8] {
            var (directory, base) = split(bytes)
            directory = strippingTrailingSlashes(directory)
            if base.isEmpty {
                directory = strippingTrailingSlashes(split(directory).directory)
            }
            return directory
        }

        /// `fileparse`: `m{^(.*/)?(.*)}s`, with `./` for a missing directory.
        private static func split(_ bytes: [UInt8]) -> (directory: [UInt8], base: [UInt8]) {
            guard let last = bytes.lastIndex(of: slash) else { return (Array("./".utf8), bytes) }
            return (Array(bytes[...last]), Array(bytes[(last + 1)...]))
        }

        /// `s{(.)/*\z}{$1}s`: `a//` is `a`, `//` is `/`.
        private static func strippingTrailingSlashes(_ bytes: [UInt8]) -> [UInt8] {
            var bytes = bytes
            while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
            return bytes
        }
    }
}
