import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
#if canImport(Glibc)
import Glibc
import SkyNetTestSupport
#endif

/// The writer against a real pipe drained by a thread: no line written after the writer went
/// to sleep is lost, and lines for two descriptors of one pipe keep their order.
extension LineWriterTests {
    /// A pipe whose read end is drained on a thread of its own into lines.
    final class PipeReader: Sendable {
        let writeEnd: Int32
        private let readEnd: Int32
        private let state = Watched((lines: [String](), ended: false))

        init() throws {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw CheckFailed(description: "pipe: errno \(errno)") }
            readEnd = fds[0]
            writeEnd = fds[1]
            let readEnd = self.readEnd, state = self.state
            startThread(named: "test-pipe") {
                var pending: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, 65536) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    pending += chunk[0..<count]
                    while let newline = pending.firstIndex(of: 10) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        state.update { $0.lines.append(line) }
                    }
                }
                close(readEnd)
                state.update { $0.ended = true }
            }
        }

        var lines: [String] { state.value.lines }
        var ended: Bool { state.value.ended }

        /// Returns once `count` lines were read; throws after `limit`.
        func wait(forLines count: Int, upTo limit: Duration) async throws {
            try await state.wait(upTo: limit) { $0.lines.count == count }
        }

        /// Returns once the pipe's write ends are all closed and everything was read.
        func waitForEnd(upTo limit: Duration) async throws {
            try await state.wait(upTo: limit) { $0.ended }
        }
    }

    @Test func aLineWrittenAfterTheWriterWentToSleepIsAlwaysWritten() async throws {
        let reader = try PipeReader()
        defer { close(reader.writeEnd) }
        let writer = LineWriter(capacity: 1024)
        for index in 0..<300 {
            await writer.write("line \(index)\n", to: reader.writeEnd)
            try await reader.wait(forLines: index + 1, upTo: .seconds(30))
        }
        #expect(reader.lines == (0..<300).map { "line \($0)" })
    }

    /// Two descriptors on one pipe: what was accepted first is written first, across them.
    @Test func linesForTwoDescriptorsOfOnePipeKeepTheirOrderFromManyProducers() async throws {
        let reader = try PipeReader()
        let other = dup(reader.writeEnd)
        let writer = LineWriter(capacity: 128)
        let producers = 8, each = 500
        let accepted = Locked<[String]>([])
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<each {
                        let text = "\(producer) \(index)"
                        let descriptor = (producer + index).isMultiple(of: 2) ? reader.writeEnd : other
                        await writer.write([LineWriter.Piece("\(text)\n", to: descriptor)], if: {
                            accepted.withLock { $0.append(text) }  // asked under the writer's lock, in acceptance order
                            return true
                        })
                    }
                }
            }
        }
        await writer.flush()
        close(reader.writeEnd)
        close(other)
        try await reader.waitForEnd(upTo: .seconds(10))
        #expect(reader.lines.count == producers * each)
        #expect(reader.lines == accepted.withLock { $0 })
    }
}
