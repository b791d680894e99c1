import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import SkyNet
@testable import SkyNetRuntime

/// A pipe (or a SOCK_SEQPACKET socket pair, whose reads show each `write` as one record) for
/// the `LineWriter` tests: the writer writes to `writeEnd`, a thread of ours reads `readEnd`
/// once `startReading` is called, until the end of the stream.
///
/// Closing is idempotent (a descriptor number closed twice could close another test's file).
/// Close the write end only after the writer was flushed: a number closed under a writer that
/// still holds pieces for it could be reused by another test's file. For that reason `deinit`
/// closes the read end only (a late write then fails with EPIPE); a test that fails before
/// closing the write end leaks that one descriptor rather than risk another test's file.
package final class TestPipe: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    private struct State {
        var bytes: [UInt8] = []
        /// Sizes of the reads, in order: with `records: true`, one a `write`.
        var reads: [Int] = []
        var ended = false
        var readerRunning = false
        var waiters: [(count: Int, signal: AsyncSignal<Void>)] = []
        var writeEndOpen = true
        var readEndOpen = true
    }

    package let readEnd: Int32
    package let writeEnd: Int32
    private let state = Locked(State())

    /// A pipe, or (`records`) a SOCK_SEQPACKET pair whose reads keep each write's bounds.
    package init(records: Bool = false) throws {
        var fds: [Int32] = [-1, -1]
        if records {
            #if canImport(Glibc)
            let type = Int32(SOCK_SEQPACKET.rawValue)
            #else
            let type = SOCK_SEQPACKET
            #endif
            guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw Failure(description: "socketpair: \(String(cString: strerror(errno)))") }
        } else {
            guard pipe(&fds) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        closeReadEnd()
    }

    /// Everything read so far.
    package var received: [UInt8] { state.withLock { $0.bytes } }
    /// What was read so far, as lines (a last piece without newline included).
    package var lines: [String] { String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init) }
    /// How many reads it took (one a record with `records: true`).
    package var readCount: Int { state.withLock { $0.reads.count } }
    /// Whether a reader thread runs.
    package var isReading: Bool { state.withLock { $0.readerRunning } }
    /// Bytes in the pipe that nobody has read yet.
    package var unread: Int {
        var count: Int32 = 0
        _ = ioctl(readEnd, UInt(FIONREAD), &count)
        return Int(count)
    }

    /// Starts the reader thread unless one runs: it reads until the end of the stream or, with
    /// `limit`, until it has read that many bytes more (then it stops; call again for more).
    package func startReading(upTo limit: Int? = nil) {
        let start = state.withLock { state -> Bool in
            defer { state.readerRunning = true }
            return !state.readerRunning
        }
        guard start else { return }
        startThread(named: "test-pipe-reader") { [self] in readLoop(limit: limit) }
    }

    private func readLoop(limit: Int?) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 1)
        defer { chunk.deallocate() }
        var total = 0, atEnd = false
        while true {
            let want = limit.map { min(chunk.count, $0 - total) } ?? chunk.count
            guard want > 0 else { break }
            let count = read(readEnd, chunk.baseAddress, want)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { atEnd = true; break }
            total += count
            let ready = state.withLock { state -> [AsyncSignal<Void>] in
                state.bytes += UnsafeRawBufferPointer(rebasing: chunk[..<count])
                state.reads.append(count)
                let have = state.bytes.count
                defer { state.waiters.removeAll { $0.count <= have } }
                return state.waiters.filter { $0.count <= have }.map(\.signal)
            }
            for signal in ready { signal.fulfil(()) }
        }
        let rest = state.withLock { state -> [AsyncSignal<Void>] in
            state.readerRunning = false
            guard atEnd else { return [] }
            state.ended = true
            defer { state.waiters = [] }
            return state.waiters.map(\.signal)
        }
        for signal in rest { signal.fulfil(()) }
    }

    /// Returns once `count` bytes have been read in all (or the stream ended); throws
    /// `TimeoutError` after `limit`.
    package func waitForBytes(_ count: Int, upTo limit: Duration = .seconds(30)) async throws {
        let signal = AsyncSignal<Void>()
        let reached = state.withLock { state -> Bool in
            if state.bytes.count >= count || state.ended { return true }
            state.waiters.append((count, signal))
            return false
        }
        if reached { return }
        try await withTimeout(limit) { await signal.value }
    }

    /// Returns everything read once the stream has ended (the write end is closed and the
    /// reader has read it all); throws `TimeoutError` after `limit`.
    package func waitForEnd(upTo limit: Duration = .seconds(30)) async throws -> [UInt8] {
        try await waitForBytes(Int.max, upTo: limit)
        return received
    }

    /// Fills the pipe until a write would block (without blocking), then makes the write end
    /// blocking again; returns how many bytes it wrote. Call it before a writer uses the pipe.
    @discardableResult
    package func fill() throws -> Int {
        let flags = fcntl(writeEnd, F_GETFL)
        guard fcntl(writeEnd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw Failure(description: "fcntl: \(String(cString: strerror(errno)))") }
        defer { _ = fcntl(writeEnd, F_SETFL, flags) }
        let filler = [UInt8](repeating: UInt8(ascii: "f"), count: 4096)
        var total = 0
        // Pages first, then single bytes: a pipe takes a small write into its last page
        // after it refused a whole page.
        for size in [4096, 1] {
            while true {
                let count = filler.withUnsafeBytes { write(writeEnd, $0.baseAddress, size) }
                if count > 0 { total += count; continue }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
                throw Failure(description: "fill: \(String(cString: strerror(errno)))")
            }
        }
        return total
    }

    /// Closes the write end (once): the reader then sees the end of the stream.
    package func closeWriteEnd() {
        if state.withLock({ state in defer { state.writeEndOpen = false }; return state.writeEndOpen }) { close(writeEnd) }
    }

    /// Closes the read end (once): a writer then gets EPIPE.
    package func closeReadEnd() {
        if state.withLock({ state in defer { state.readEndOpen = false }; return state.readEndOpen }) { close(readEnd) }
    }
}
