import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetWork

/// Inputs from a file: counted and checked up front, then read lazily in batches.
struct InputFileTests {
    func file(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("inputs-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func tasks(of inputs: InputFile, skipping: Set<Int> = []) async -> [ScanTask] {
        let feed = inputs.feed { sector, text in skipping.contains(sector) ? nil : ScanTask(input: sector, job: "echo", text: text) }
        var all: [ScanTask] = []
        while true {
            let batch = await feed.nextBatch()
            if batch.isEmpty { return all }
            all += batch
        }
    }

    @Test func eachLineIsOneInputWithItsSectorCarriageReturnsDroppedAndALastLineWithoutNewline() async throws {
        let path = try file(Array("a b\r\n\n  x  \nlast".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inputs = try await InputFile.open(path: path)
        #expect(inputs.count == 4)
        let read = await tasks(of: inputs)
        #expect(read.map(\.text) == ["a b", "", "  x  ", "last"])
        #expect(read.map(\.input) == [0, 1, 2, 3])
    }

    @Test func aLimitCapsTheInputsAndSkippedSectorsAreNotMade() async throws {
        let path = try file(Array((0..<5000).map { "line \($0)\n" }.joined().utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inputs = try await InputFile.open(path: path, limit: 3000)
        #expect(inputs.count == 3000)
        let read = await tasks(of: inputs, skipping: [0, 2999])
        #expect(read.count == 2998)
        #expect(read.first?.text == "line 1")
        #expect(read.last?.text == "line 2998")
    }

    @Test func badLinesAreRefusedNamingTheirLine() async throws {
        let long = [UInt8](repeating: 0x61, count: ScanTask.maxTextBytes + 1)
        let cases: [([UInt8], String)] = [
            (Array("ok\n".utf8) + [0xC3, 0x28, 10], "line 2 is not valid UTF-8"),
            (Array("ok\nok\na".utf8) + [0] + [10], "line 3 holds a NUL byte"),
            (Array("ok\n".utf8) + long + [10], "line 2 is longer than \(ScanTask.maxTextBytes) bytes"),
        ]
        for (bytes, message) in cases {
            let path = try file(bytes)
            defer { try? FileManager.default.removeItem(atPath: path) }
            await #expect { try await InputFile.open(path: path) } throws: { "\($0)".contains(message) }
        }
    }

    @Test func aLineOfTheMostBytesIsAccepted() async throws {
        let path = try file([UInt8](repeating: 0x62, count: ScanTask.maxTextBytes) + [13, 10])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let read = await tasks(of: try await InputFile.open(path: path))
        #expect(read.map { $0.text?.utf8.count } == [ScanTask.maxTextBytes])
    }

    @Test func aFileThatShrankAfterCountingEndsTheFeedWithAFailure() async throws {
        let path = try file(Array("a\nb\nc\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inputs = try await InputFile.open(path: path)
        #expect(truncate(path, 2) == 0)
        let feed = inputs.feed { ScanTask(input: $0, text: $1) }
        #expect(await feed.nextBatch().count == 1)
        #expect(feed.failure?.description.contains("changed while the scan read it") == true)
    }

    @Test func verifyFindsTheFirstLineThatDiffersFromTheJournal() async throws {
        let path = try file(Array("a\nB\nc\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inputs = try await InputFile.open(path: path)
        let journaled = ["a", "b", "c"].map(inputFingerprint)
        await #expect { try await inputs.verify { journaled[$0] } } throws: { "\($0)".contains("line 2 is not the input") }
        try await inputs.verify { $0 == 1 ? nil : journaled[$0] }  // sector 1 did not complete: nothing to compare
    }

    @Test func aFIFOIsSpooledLikeStandardInputAndReadsLikeAFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("inputs-fifo-\(UUID().uuidString)").path
        #expect(mkfifo(path, 0o600) == 0)
        defer {
            // Frees the writer if the reader never opened the FIFO, then removes it.
            let fd = open(path, O_RDONLY | O_NONBLOCK)
            if fd >= 0 { close(fd) }
            unlink(path)
        }
        let bytes = Array("one\ntwo words\nthree\n".utf8)
        let writer = Thread {
            // A reader that gives up early must not kill the test with SIGPIPE.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            let fd = open(path, O_WRONLY | O_CLOEXEC)  // waits for the reader
            guard fd >= 0 else { return }
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        writer.start()
        let inputs = try await InputFile.open(path: path)
        #expect(inputs.count == 3)
        let read = await tasks(of: inputs)
        #expect(read.map(\.text) == ["one", "two words", "three"])
        let journaled = ["one", "two words", "three"].map(inputFingerprint)
        try await inputs.verify { journaled[$0] }
    }
}
