import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// A node started with few descriptors: when a flood exhausts them it says
/// so clearly, once, and serves again once the flood is gone.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct DescriptorLimitTests {
        @Test func aNodeOutOfDescriptorsSaysWhichLimitOnceAndServesAfterTheFlood() async throws {
            let node = try LowLimitNode(descriptors: 64)
            defer { node.kill() }
            let port = try await node.port()
            var flood: [RawLineClient] = []
            for _ in 0..<100 {
                let client = try await RawLineClient(port: port)
                try client.send(#"{"type":"hello","version":1,"name":"flood"}"#)
                flood.append(client)
            }
            let clear = "Too many open files (this process may open 64 descriptors; raise the limit with ulimit -n)"
            try await node.waitForError(containing: clear)
            flood.removeAll()  // closes them all
            let fresh = try await RawLineClient(port: port, first: #"{"type":"hello","version":1}"#)
            #expect(try await fresh.receive()?["type"] as? String == "welcome")
            #expect(try await fresh.exchange(#"{"type":"ping","id":1}"#)?["type"] as? String == "pong")
            let reports = node.errors.filter { $0.contains("Too many open files") }
            #expect(reports.count <= 3, "logged per accept, not per burst: \(reports.count) lines")
        }
    }
}

/// `skynet node` under `ulimit -n N`, set by a shell in this test only (the binary's path is
/// an argument of the shell, never part of its script).
final class LowLimitNode: Sendable {
    private let process: Process
    private let output = Locked<[String]>([])
    private let stderrLines = Locked<[String]>([])

    init(descriptors: Int) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -n \(descriptors) && exec \"$0\" node --port 0 --name low --failing-every 0", skynetBinary.path]
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        Self.collect(out.fileHandleForReading, into: output)
        Self.collect(err.fileHandleForReading, into: stderrLines)
    }

    var errors: [String] { stderrLines.withLock { $0 } }

    func port() async throws -> Int {
        let line = try await waitFor(output) { $0.hasPrefix("listening on ") }
        return try #require(parseListening(line)?.1)
    }

    func waitForError(containing text: String) async throws {
        _ = try await waitFor(stderrLines) { $0.contains(text) }
    }

    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Awaits a line, looking again every few milliseconds, for at most 20 s.
    private func waitFor(_ lines: Locked<[String]>, _ predicate: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let line = lines.withLock({ $0.first(where: predicate) }) { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimeoutError()
    }

    private static func collect(_ handle: FileHandle, into lines: Locked<[String]>) {
        let thread = Thread {
            var partial = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                partial.append(chunk)
                while let newline = partial.firstIndex(of: 10) {
                    let line = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
                    lines.withLock { $0.append(line) }
                    partial = Data(partial[(newline + 1)...])
                }
            }
        }
        thread.start()
    }
}
