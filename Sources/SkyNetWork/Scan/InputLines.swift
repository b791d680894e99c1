import SkyNetRuntime

/// Why an inputs file cannot be used, naming the file and, for a bad line, its number.
package struct InputFailure: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Reads the lines of a file one at a time through a bounded buffer, checking each as an
/// input: valid UTF-8, no NUL byte, at most `ScanTask.maxTextBytes` bytes once a trailing
/// `\r` is stripped. It reads with `pread` at its own offset, so several cursors can walk one
/// descriptor. Blocking: use it on a thread of its own.
struct LineCursor: Sendable {
    static let chunkSize = 256 * 1024
    let descriptor: Int32
    /// The file's name in messages.
    let name: String
    /// The 0-based number of the next line (its sector).
    private(set) var lineIndex = 0
    private var offset: off_t = 0
    private var buffer = [UInt8](repeating: 0, count: chunkSize)
    private var start = 0
    private var end = 0
    private var atEOF = false
    /// Holds the start of a line that runs past the buffered chunk; one byte more than an input
    /// may hold (a trailing `\r`), and a longer line fails as soon as it is seen.
    private var lines = LineFramer(maxLineBytes: ScanTask.maxTextBytes + 1, overLong: .fail)
    /// The start of the line that `lines` holds has a NUL byte.
    private var heldNUL = false

    init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }

    /// The next line's text, checked; nil at the end of the file (a last line without a
    /// newline counts).
    mutating func nextLine() throws(InputFailure) -> String? {
        while true {
            if start < end {
                if let text = try nextInBuffer() { return text }
            } else if atEOF {
                var last: Result<String, InputFailure>?
                let place = (name, lineIndex)
                lines.finish { if case .line(let bytes) = $0 { last = Self.check(bytes, place) } }
                guard let last else { return nil }
                let text = try last.get()
                lineIndex += 1
                return text
            } else {
                try fill()
            }
        }
    }

    /// The next line of the buffered chunk, checked; nil once its rest is held as the start
    /// of a line.
    private mutating func nextInBuffer() throws(InputFailure) -> String? {
        let first = start
        var taken: Result<String, InputFailure>?
        let place = (name, lineIndex)
        buffer.withUnsafeBytes { raw in
            lines.split(UnsafeRawBufferPointer(rebasing: raw[..<end]), from: &start) { piece in
                switch piece {
                case .line(let bytes): taken = Self.check(bytes, place)
                // A NUL byte is named first, as for a short line: `/dev/zero` holds one.
                case .tooLong: taken = .failure(heldNUL || raw[first..<end].prefix { $0 != 10 }.contains(0)
                                                ? Self.holdsNUL(place) : Self.tooLong(place))
                }
                return false
            }
        }
        guard let taken else {
            heldNUL = heldNUL || buffer[first..<end].contains(0)
            return nil
        }
        heldNUL = false
        let text = try taken.get()
        lineIndex += 1
        return text
    }

    private mutating func fill() throws(InputFailure) {
        var count: Int
        repeat {
            count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
        } while count < 0 && errno == EINTR
        guard count >= 0 else { throw InputFailure("inputs \(name): \(String(cString: strerror(errno)))") }
        offset += off_t(count)
        start = 0
        end = count
        atEOF = count == 0
    }

    /// The line as text, or why it cannot be an input; `place` names the file and the line's index.
    private static func check(_ raw: UnsafeRawBufferPointer, _ place: (name: String, index: Int)) -> Result<String, InputFailure> {
        var bytes = raw
        if let last = bytes.last, last == 13 { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
        if bytes.contains(0) { return .failure(holdsNUL(place)) }
        guard bytes.count <= ScanTask.maxTextBytes else { return .failure(tooLong(place)) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(InputFailure("inputs \(place.name) line \(place.index + 1) is not valid UTF-8"))
        }
        return .success(text)
    }

    private static func holdsNUL(_ place: (name: String, index: Int)) -> InputFailure {
        InputFailure("inputs \(place.name) line \(place.index + 1) holds a NUL byte, which no command argument can carry")
    }

    private static func tooLong(_ place: (name: String, index: Int)) -> InputFailure {
        InputFailure("inputs \(place.name) line \(place.index + 1) is longer than \(ScanTask.maxTextBytes) bytes, the most one input may hold")
    }
}

/// A 32-bit fingerprint of an input text (FNV-1a, folded): what a resume compares to tell a
/// changed inputs file, four bytes a sector.
package func inputFingerprint(_ text: String) -> UInt32 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01b3
    }
    return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
}
