import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// The file pump: bounded queueing against a peer that does not read, files taking turns a
/// chunk each, byte-exact files with their digests, and a file that changes while sent.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct FilePumpTests {
    /// What the pump reported for each request id, and the largest queue seen after a chunk.
    private struct Seen: Sendable {
        var done: [Int: Result<Void, ScanFailure>] = [:]
        var maxQueued = 0
    }

    private func makeFiles(_ sizes: [String: Int], seed: UInt64) throws -> (String, [String: [UInt8]]) {
        let directory = NSTemporaryDirectory() + "skynet-pump-\(UUID())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        var random = SeededRandom(seed: seed)
        var contents: [String: [UInt8]] = [:]
        for (name, size) in sizes {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            contents[name] = bytes
            _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(bytes))
        }
        return (directory, contents)
    }

    private func outgoing(_ name: String, id: Int, in directory: String, seen: Watched<Seen>, connection: Connection,
                          afterChunk: (@Sendable (Int64) -> Void)? = nil) -> OutgoingFile {
        OutgoingFile(
            id: id, file: nil, maxSize: 1 << 30, name: name,
            open: { () throws(ScanFailure) -> OpenFile in
                do { return try DirectoryHandle.open(directory).openFile(name) } catch {
                    throw ScanFailure(code: .taskFailed, message: "\(error)")
                }
            },
            header: { header in BasefileRequest(id: id, path: name, file: header).line },
            isCancelled: { false },
            done: { result in seen.update { $0.done[id] = result } },
            afterChunk: { offset in
                let queued = connection.queuedBytes
                seen.update { $0.maxQueued = max($0.maxQueued, queued) }
                afterChunk?(offset)
            })
    }

    /// Decodes what arrived: per id, the header, the bytes in order, and the end's digest; and
    /// the ids of the `data` lines in the order they came.
    private func decode(_ lines: [String]) throws -> (files: [Int: (header: FileHeader?, bytes: [UInt8], end: [UInt8]?)], order: [Int]) {
        var files: [Int: (header: FileHeader?, bytes: [UInt8], end: [UInt8]?)] = [:]
        var order: [Int] = []
        for line in lines {
            switch try Request.decode(Data(line.utf8)) {
            case .basefile(let basefile): files[basefile.id, default: (nil, [], nil)].header = basefile.file
            case .chunk(let chunk):
                #expect(Int64(files[chunk.id, default: (nil, [], nil)].bytes.count) == chunk.offset)
                files[chunk.id, default: (nil, [], nil)].bytes += chunk.bytes
                order.append(chunk.id)
            case .fileEnd(let end): files[end.id, default: (nil, [], nil)].end = end.sha256
            default: Issue.record("unexpected line \(line.prefix(60))")
            }
        }
        return (files, order)
    }

    @Test func filesArriveWholeTakingTurnsWithTheQueueNeverPastTheWindowAndALine() async throws {
        let (directory, contents) = try makeFiles(["big": 2 << 20, "small": 600 << 10, "empty": 0], seed: 21)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (server, client) = try await loopbackPair()
        server.setBufferSizes(send: 16384, receive: 16384)
        client.setBufferSizes(send: 16384, receive: 16384)
        let connection = Connection(socket: server, peer: "pump")
        connection.start(onEvent: { _ in })
        let seen = Watched(Seen())
        let pump = FilePump(connection: connection)
        for (id, name) in [(1, "big"), (2, "small"), (3, "empty")] {
            pump.enqueue(outgoing(name, id: id, in: directory, seen: seen, connection: connection))
        }
        // The peer reads nothing for a while: the pump fills the window, then stops there.
        try await awaitState { connection.queuedBytes >= FilePump.window - 360 * 1024 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.value.done[1] == nil && seen.value.done[2] == nil)  // the empty file is done at once
        let expected = 10 + 5 + 2
        let lines = try await onOwnThread(named: "test-read") { receiveLines(from: client, count: expected, silence: .seconds(20)) }
        try await seen.wait(upTo: .seconds(30)) { $0.done.count == 3 }
        connection.close()
        client.close()

        let sealedLine = Base64.encodedCount(maxChunkBytes) + 200
        #expect(seen.value.maxQueued <= FilePump.window + sealedLine)
        let (files, order) = try decode(lines)
        for (id, name) in [(1, "big"), (2, "small"), (3, "empty")] {
            let bytes = contents[name] ?? []
            #expect(files[id]?.bytes == bytes, "\(name)")
            #expect(files[id]?.header?.size == Int64(bytes.count), "\(name)")
            #expect(files[id]?.end == SHA256.hash(bytes), "\(name)")
            guard case .success? = seen.value.done[id] else { Issue.record("\(name) not sent"); continue }
        }
        // Turns: the small file's chunks went out between the big file's, not after them all.
        let firstSmall = try #require(order.firstIndex(of: 2)), lastBig = try #require(order.lastIndex(of: 1))
        #expect(firstSmall < lastBig)
        let small = order.indices.filter { order[$0] == 2 }
        #expect(zip(small, small.dropFirst()).allSatisfy { $1 - $0 == 2 })  // a big chunk between each two small ones
    }

    @Test func aFileAppendedToWhileSentFailsAsChangedAndGetsNoEnd() async throws {
        let (directory, _) = try makeFiles(["grows": 700 << 10], seed: 5)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (server, client) = try await loopbackPair()
        let connection = Connection(socket: server, peer: "pump")
        connection.start(onEvent: { _ in })
        let seen = Watched(Seen())
        let path = "\(directory)/grows"
        let file = outgoing("grows", id: 9, in: directory, seen: seen, connection: connection) { offset in
            guard offset == Int64(maxChunkBytes), let handle = FileHandle(forWritingAtPath: path) else { return }
            handle.seekToEndOfFile()
            handle.write(Data("more".utf8))
            handle.closeFile()
        }
        let reader = Task { try await onOwnThread(named: "test-read") { receiveLines(from: client, count: 100, silence: .seconds(20)) } }
        FilePump(connection: connection).enqueue(file)
        try await seen.wait(upTo: .seconds(30)) { $0.done[9] != nil }
        connection.close()
        let lines = try await reader.value
        client.close()
        guard case .failure(let failure)? = seen.value.done[9] else { Issue.record("not failed"); return }
        #expect(failure.code == .fileChanged)
        #expect(failure.message == "grows changed while it was being sent (size 716800 → 716804)")
        #expect(!lines.contains { $0.contains(#""type":"end""#) })
        #expect(try decode(lines).files[9]?.bytes.count == 700 << 10)
    }

    @Test func aStoppedPumpFailsWhatIsQueuedAndWhatComesLater() async throws {
        let (server, client) = try await loopbackPair()
        defer { client.close() }
        let connection = Connection(socket: server, peer: "pump")
        connection.start(onEvent: { _ in })
        defer { connection.close() }
        let seen = Watched(Seen())
        let pump = FilePump(connection: connection)
        pump.stop()
        pump.enqueue(outgoing("missing", id: 4, in: "/nonexistent", seen: seen, connection: connection))
        guard case .failure(let failure)? = seen.value.done[4] else { Issue.record("not failed at once"); return }
        #expect(failure == FilePump.closed)
    }
}
