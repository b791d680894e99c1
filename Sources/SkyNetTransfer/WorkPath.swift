import SkyNetWork

/// A path a coordinator named, split for opening one component at a time under a work
/// directory: the node's own check, whatever the wire decoding already refused.
///
/// Leading `/`s are dropped (an absolute input lands under the work directory: `/data/a.jpg`
/// → `data/a.jpg`); `.` and empty components (`a//b`) are skipped; a `..` component, a NUL
/// (a C string would end there, naming another file), a newline, a component over 255 bytes
/// or a path over 4,096 bytes is refused, as is a path naming no file at all.
package struct WorkPath: Sendable, Equatable {
    static let maxBytes = 4096
    static let maxComponentBytes = 255

    /// The path as given, for messages.
    package let text: String
    /// The directories on the way, then the file's own name.
    let directories: [String]
    let name: String

    init(_ text: String) throws(ScanFailure) {
        self.text = text
        func refuse(_ why: String) -> ScanFailure {
            ScanFailure(code: .badRequest, message: "\"\(text.escapingControlCharacters)\": \(why)")
        }
        guard text.utf8.count <= Self.maxBytes else { throw refuse("longer than \(Self.maxBytes) bytes") }
        guard !text.utf8.contains(0) else { throw refuse("a NUL byte is refused") }
        guard !text.utf8.contains(UInt8(ascii: "\n")) else { throw refuse("a name with a newline is refused") }
        // Split on `/` bytes, never on characters (`TransferPath.byteComponents`).
        let components = TransferPath.byteComponents(text).filter { !$0.isEmpty && !TransferPath.isDot($0) }
        guard !components.contains(where: TransferPath.isDotDot) else { throw refuse("a \"..\" component is refused") }
        if let long = components.first(where: { $0.utf8.count > Self.maxComponentBytes }) {
            throw refuse("the component \"\(long.prefix(32))…\" is longer than \(Self.maxComponentBytes) bytes")
        }
        guard let name = components.last else { throw refuse("names no file") }
        directories = Array(components.dropLast())
        self.name = name
    }

    /// Whether `other` names the same file under a work directory: the same components, byte
    /// for byte (`café` in NFC and in NFD, equal as Swift strings, are two files).
    func namesSameFile(as other: WorkPath) -> Bool {
        directories.count == other.directories.count && name.utf8.elementsEqual(other.name.utf8)
            && zip(directories, other.directories).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    /// The first `count` directories as a path, for messages (`photos` of `photos/2024/a.jpg`).
    func prefix(_ count: Int) -> String {
        directories.prefix(count).joined(separator: "/")
    }
}
