import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetWork

/// Inputs that can be read only once (a pipe, a FIFO, a device) are spooled to a temporary
/// file, but never without bound: no further than `--total` lines, no further than the first
/// bad line, and never past the spool's cap.
@Suite(.timeLimit(.minutes(2)))
struct InputSpoolTests {
    /// A FIFO that a thread of ours keeps feeding with `chunk` until `bound` bytes are written
    /// or the reader closes it; `written` says how many bytes the reader let in.
    final class Feeder: Sendable {
        let path: String
        private let count = Locked(0)
        private let done = AsyncSignal<Void>()

        init(chunk: [UInt8], bound: Int) {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("inputs-spool-\(UUID().uuidString)").path
            mkfifo(path, 0o600)
            let (path, count, done) = (path, count, done)
            let writer = Thread {
                defer { done.fulfil(()) }
                // A reader that gives up early must not kill the test with SIGPIPE.
                var pipeSignal = sigset_t()
                sigemptyset(&pipeSignal)
                sigaddset(&pipeSignal, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
                let fd = open(path, O_WRONLY | O_CLOEXEC)  // waits for the reader
                guard fd >= 0 else { return }
                defer { close(fd) }
                while count.withLock({ $0 }) < bound {
                    let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    count.withLock { $0 += written }
                }
            }
            writer.start()
        }

        /// The bytes written, once the writer stopped (bounded wait: it stops when the reader
        /// closes, or when the bound is reached).
        func written() async throws -> Int {
            let done = self.done
            try await withTimeout(.seconds(60)) { await done.value }
            return count.withLock { $0 }
        }

        deinit {
            // Frees the writer if the reader never opened the FIFO, then removes it.
            let fd = open(path, O_RDONLY | O_NONBLOCK)
            if fd >= 0 { close(fd) }
            unlink(path)
        }
    }

    static let bound = 256 * 1024 * 1024
    static let little = 8 * 1024 * 1024

    @Test func aPipeWithATotalIsReadNoFurtherThanItsLines() async throws {
        let feeder = Feeder(chunk: Array(String(repeating: "y\n", count: 32 * 1024).utf8), bound: Self.bound)
        let inputs = try await InputFile.open(path: feeder.path, limit: 5)
        #expect(inputs.count == 5)
        let written = try await feeder.written()
        #expect(written < Self.little, "read \(written) bytes of a pipe for 5 inputs")
    }

    @Test func aPipeOfNULBytesIsRefusedAtLineOneWithoutSpoolingItAll() async throws {
        let feeder = Feeder(chunk: [UInt8](repeating: 0, count: 64 * 1024), bound: Self.bound)
        let path = feeder.path
        await #expect { try await InputFile.open(path: path) } throws: {
            "\($0)" == "inputs \(path) line 1 holds a NUL byte, which no command argument can carry"
        }
        let written = try await feeder.written()
        #expect(written < Self.little, "read \(written) bytes of a pipe whose line 1 is bad")
    }

    @Test func aBadLineOfAPipeIsRefusedWhileSpoolingWithTheFilesMessage() async throws {
        let feeder = Feeder(chunk: Array("ok\n".utf8) + [0xC3, 0x28, 10] + Array(String(repeating: "fine\n", count: 8192).utf8),
                            bound: Self.bound)
        let path = feeder.path
        await #expect { try await InputFile.open(path: path) } throws: { "\($0)" == "inputs \(path) line 2 is not valid UTF-8" }
        let written = try await feeder.written()
        #expect(written < Self.little, "read \(written) bytes of a pipe whose line 2 is bad")
    }

    @Test func aLineTooLongInAPipeIsRefusedWhileSpooling() async throws {
        let feeder = Feeder(chunk: [UInt8](repeating: 0x61, count: 64 * 1024), bound: Self.bound)
        let path = feeder.path
        await #expect { try await InputFile.open(path: path) } throws: {
            "\($0)" == "inputs \(path) line 1 is longer than \(ScanTask.maxTextBytes) bytes, the most one input may hold"
        }
        let written = try await feeder.written()
        #expect(written < Self.little, "read \(written) bytes of a pipe whose line 1 is too long")
    }

    @Test func theSpoolStopsAtItsCapWithAClearError() async throws {
        let feeder = Feeder(chunk: Array(String(repeating: "line\n", count: 8192).utf8), bound: 16 * 1024 * 1024)
        let path = feeder.path
        await #expect { try await InputFile.open(path: path, spoolCap: 1024 * 1024) } throws: {
            "\($0)".hasPrefix("inputs \(path): more than 1 MiB arrived through a pipe or device")
        }
        let written = try await feeder.written()
        #expect(written < 4 * 1024 * 1024, "read \(written) bytes past a cap of 1 MiB")
    }

    @Test func aPipeUnderTheCapReadsWhole() async throws {
        let feeder = Feeder(chunk: Array(String(repeating: "line\n", count: 1000).utf8), bound: 5000 * 3)
        let inputs = try await InputFile.open(path: feeder.path, spoolCap: 1024 * 1024)
        #expect(inputs.count == 3000)
        #expect(try await feeder.written() == 15_000)
    }
}
