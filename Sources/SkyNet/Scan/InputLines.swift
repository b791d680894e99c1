#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an inputs file cannot be used, naming the file and, for a bad line, its number.
public struct InputFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
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
    /// The start of a line that runs past the buffered chunk (bounded by the longest input).
    private var partial: [UInt8] = []

    init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }

    /// The next line's text, checked; nil at the end of the file (a last line without a
    /// newline counts).
    mutating func nextLine() throws(InputFailure) -> String? {
        while true {
            if start < end {
                let stop = buffer[start..<end].firstIndex(of: 10)
                let pieceEnd = stop ?? end
                if partial.count + pieceEnd - start > ScanTask.maxTextBytes + 1 {
                    // A NUL byte is named first, as for a short line: `/dev/zero` holds one.
                    if partial.contains(0) || buffer[start..<pieceEnd].contains(0) { throw holdsNUL() }
                    throw tooLong()
                }
                if let stop {
                    let text: String
                    if partial.isEmpty {
                        text = try buffer.withUnsafeBufferPointer { check(UnsafeBufferPointer(rebasing: $0[start..<stop])) }.get()
                    } else {
                        partial.append(contentsOf: buffer[start..<stop])
                        text = try partial.withUnsafeBufferPointer { check($0) }.get()
                        partial.removeAll(keepingCapacity: false)
                    }
                    start = stop + 1
                    lineIndex += 1
                    return text
                }
                partial.append(contentsOf: buffer[start..<end])
                start = end
            }
            if atEOF {
                guard !partial.isEmpty else { return nil }
                let text = try partial.withUnsafeBufferPointer { check($0) }.get()
                partial = []
                lineIndex += 1
                return text
            }
            try fill()
        }
    }

    private mutating func fill() throws(InputFailure) {
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw InputFailure("inputs \(name): \(String(cString: strerror(errno)))")
            }
            offset += off_t(count)
            start = 0
            end = count
            atEOF = count == 0
            return
        }
    }

    /// The line as text, or why it cannot be an input.
    private func check(_ raw: UnsafeBufferPointer<UInt8>) -> Result<String, InputFailure> {
        var bytes = raw
        if let last = bytes.last, last == 13 { bytes = UnsafeBufferPointer(rebasing: bytes.dropLast()) }
        let place = "inputs \(name) line \(lineIndex + 1)"
        if bytes.contains(0) { return .failure(holdsNUL()) }
        guard bytes.count <= ScanTask.maxTextBytes else { return .failure(tooLong()) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(InputFailure("\(place) is not valid UTF-8"))
        }
        return .success(text)
    }

    private func holdsNUL() -> InputFailure {
        InputFailure("inputs \(name) line \(lineIndex + 1) holds a NUL byte, which no command argument can carry")
    }

    private func tooLong() -> InputFailure {
        InputFailure("inputs \(name) line \(lineIndex + 1) is longer than \(ScanTask.maxTextBytes) bytes, the most one input may hold")
    }
}

/// A 32-bit fingerprint of an input text (FNV-1a, folded): what a resume compares to tell a
/// changed inputs file, four bytes a sector.
public func inputFingerprint(_ text: String) -> UInt32 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01b3
    }
    return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
}
