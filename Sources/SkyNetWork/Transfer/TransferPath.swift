/// A path the coordinator will not send or write a file by: it says which and why. Final: the
/// task is given up at once (running it again cannot help).
package struct TransferRefusal: Error, CustomStringConvertible, Sendable, Equatable {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// A path a file travels by: 1…4,096 bytes of UTF-8, no NUL, no newline, no `..`
/// component, each component at most 255 bytes; components `.` and empty ones (`a//b`) are
/// skipped when it is opened. It may be absolute here (an input, a returned file's target);
/// on a node it is always relative to the task's work directory (`onNode`).
package struct TransferPath: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes a path may hold (Linux's PATH_MAX).
    package static let maxBytes = 4096
    /// The most bytes one component may hold (Linux's NAME_MAX).
    package static let maxComponentBytes = 255

    /// The path as written.
    package let text: String
    /// Its components, without empty and `.` ones: what is opened, one at a time.
    package let components: [String]
    /// Whether it starts with `/`.
    package let isAbsolute: Bool

    package init(_ text: String) throws(TransferRefusal) {
        let bytes = text.utf8
        let shown = Self.quoted(text)
        guard !bytes.isEmpty else { throw TransferRefusal("an empty path names no file") }
        guard bytes.count <= Self.maxBytes else {
            throw TransferRefusal("\(Self.quoted(String(text.prefix(40))))… is \(bytes.count) bytes long, over the \(Self.maxBytes) a path may have")
        }
        guard !bytes.contains(UInt8(ascii: "\n")) else { throw TransferRefusal("\(shown): a name with a newline cannot be sent") }
        guard !bytes.contains(0) else { throw TransferRefusal("\(shown): a name with a NUL byte cannot be sent") }
        let all = Self.byteComponents(text)
        guard !all.contains(where: Self.isDotDot) else { throw TransferRefusal("\(shown): a \"..\" component is refused") }
        if let long = all.first(where: { $0.utf8.count > Self.maxComponentBytes }) {
            throw TransferRefusal("\(shown): the component \(Self.quoted(String(long.prefix(40))))… is over \(Self.maxComponentBytes) bytes")
        }
        let components = all.filter { !$0.isEmpty && !Self.isDot($0) }
        guard !components.isEmpty else { throw TransferRefusal("\(shown) names a directory, not a file") }
        self.text = text
        self.components = components
        isAbsolute = bytes.first == UInt8(ascii: "/")
    }

    private init(text: String, components: [String]) {
        self.text = text
        self.components = components
        isAbsolute = false
    }

    /// The path on a node: relative to the task's work directory, its leading `/`s removed
    /// (`/data/a.jpg` → `data/a.jpg`); a relative path as it is.
    package var onNode: TransferPath {
        guard isAbsolute else { return self }
        return TransferPath(text: String(decoding: text.utf8.drop { $0 == UInt8(ascii: "/") }, as: UTF8.self), components: components)
    }

    /// Whether `other` names the same file as this path, as it is opened: both absolute or both
    /// relative, with the same components byte for byte (`./a` and `a//b` are `a` and `a/b`;
    /// `café` in NFC and in NFD, equal as Swift strings, are two files).
    package func namesSameFile(as other: TransferPath) -> Bool {
        isAbsolute == other.isAbsolute && components.count == other.components.count
            && zip(components, other.components).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    /// The directories on the way, without the file's own name.
    package var directories: [String] { Array(components.dropLast()) }

    /// The file's own name (the last component).
    package var name: String { components[components.count - 1] }

    package var description: String { text }

    /// The components of `text`: what lies between its `/` bytes, empty ones too. Split on the
    /// UTF-8 bytes, never on `Character`s, which join a `/` with a combining mark after it
    /// (`../\u{301}x` is one component as characters, and `..` then `\u{301}x` as a file
    /// system reads it). A piece between ASCII bytes of UTF-8 is UTF-8 itself: nothing lost.
    package static func byteComponents(_ text: String) -> [String] {
        text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `component` is `..`, byte for byte.
    package static func isDotDot(_ component: String) -> Bool { component.utf8.elementsEqual([0x2E, 0x2E]) }

    /// Whether `component` is `.`, byte for byte.
    package static func isDot(_ component: String) -> Bool { component.utf8.elementsEqual([0x2E]) }

    /// `text` in double quotes, with a quote, a backslash or a control character escaped, so a
    /// message shows exactly which name it means.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
