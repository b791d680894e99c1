#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a byte stream into lines: pure framing, no sockets, so tests can drive it directly.
///
/// Feed it chunks as they arrive, in any sizes; it hands out every complete line (without its
/// newline) in order. A line longer than `maxLineBytes` (newline excluded) is reported once as
/// `.tooLong`, as soon as it is known to be too long; after that the framer emits nothing.
public struct LineFramer: Sendable {
    /// What a chunk yields.
    public enum Output: Sendable, Equatable {
        case line(Data)
        case tooLong
    }

    public let maxLineBytes: Int
    /// The start of a line whose newline has not arrived yet.
    private var partial = Data()
    /// A line was too long: the stream cannot be framed any further.
    public private(set) var isBroken = false

    public init(maxLineBytes: Int) {
        self.maxLineBytes = max(0, maxLineBytes)
    }

    /// Bytes held of a line not yet complete.
    public var pendingCount: Int { partial.count }

    /// Frames `chunk`, calling `emit` for each complete line in order (and at most once with
    /// `.tooLong`, after which nothing more is emitted).
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, emit: (Output) -> Void) {
        guard !isBroken, let base = chunk.baseAddress, chunk.count > 0 else { return }
        var start = 0
        while start < chunk.count, let found = memchr(base + start, 10, chunk.count - start) {
            let end = base.distance(to: UnsafeRawPointer(found))
            guard partial.count + end - start <= maxLineBytes else { return breakStream(emit) }
            if partial.isEmpty {
                emit(.line(Data(bytes: base + start, count: end - start)))
            } else {
                partial.append(Data(bytes: base + start, count: end - start))
                let line = partial
                partial = Data()
                emit(.line(line))
            }
            start = end + 1
        }
        // Checked before copying, so a peer that never sends a newline costs at most the limit.
        guard partial.count + chunk.count - start <= maxLineBytes else { return breakStream(emit) }
        partial.append(Data(bytes: base + start, count: chunk.count - start))
    }

    /// `feed` for an array: the lines and whether the stream broke, for tests and small callers.
    public mutating func feed(_ bytes: [UInt8]) -> [Output] {
        var outputs: [Output] = []
        bytes.withUnsafeBytes { feed($0) { outputs.append($0) } }
        return outputs
    }

    private mutating func breakStream(_ emit: (Output) -> Void) {
        isBroken = true
        partial = Data()
        emit(.tooLong)
    }
}
