import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport

/// `Connection.waitForRoom(below:)`, `sendIfRoom` and `sendWhenRoom`, and the byte counters: a
/// sender that waits for room is held while the peer does not read, let go once it drains, and
/// told when the connection ends.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ConnectionRoomTests {
    /// A connection whose peer does not read yet, with small kernel buffers, queued up past
    /// `bytes`; `lines` were sent.
    private func backedUp(past bytes: Int, limits: Connection.Limits = Connection.Limits()) async throws -> (Connection, client: Socket, lines: Int) {
        let (server, client) = try await loopbackPair()
        server.setBufferSizes(send: 16384, receive: 16384)
        client.setBufferSizes(send: 16384, receive: 16384)
        let connection = Connection(socket: server, peer: "room", limits: limits)
        connection.start(onEvent: { _ in })
        let line = Array(String(repeating: "x", count: 4095).utf8) + [10]
        var lines = 0
        // Until the kernel takes nothing more (the socket is not writable: its buffer is full
        // and the peer's window closed), with the queue still past `bytes`: until then the
        // loop keeps moving queued bytes into the kernel, and a busy machine let it do so
        // after a test's senders had started to wait, which made room for them.
        while true {
            while connection.queuedBytes < bytes {
                try connection.send(line)
                lines += 1
            }
            try await awaitState(upTo: .seconds(20)) { !Self.isWritable(server) || connection.queuedBytes < bytes }
            if !Self.isWritable(server), connection.queuedBytes >= bytes { return (connection, client, lines) }
        }
    }

    private static func isWritable(_ socket: Socket) -> Bool {
        var polled = pollfd(fd: socket.descriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&polled, 1, 0) == 1
    }

    /// Runs `waitForRoom` on a thread of its own; the signal gets its answer.
    private func waitOnAThread(_ connection: Connection, below bytes: Int) -> AsyncSignal<Bool> {
        let answer = AsyncSignal<Bool>()
        startThread(named: "test-room") { answer.fulfil(connection.waitForRoom(below: bytes)) }
        return answer
    }

    @Test func aSenderWaitsWhileThePeerDoesNotReadAndGoesOnOnceItDrains() async throws {
        let (connection, client, lines) = try await backedUp(past: 256 << 10)
        defer { connection.close(); client.close() }
        let answer = waitOnAThread(connection, below: 128 << 10)
        try await Task.sleep(for: .milliseconds(200))
        #expect(answer.current == nil)  // held: nothing was read
        #expect(connection.queuedBytes >= 128 << 10)
        let drained = Task {
            try await onOwnThread(named: "test-drain") {
                // Every line, however long the writer is kept from the CPU (a short silence
                // bound stopped reading early under a full test run, and the wait never ended).
                receiveLines(from: client, count: lines, silence: .seconds(20))
            }
        }
        do {
            #expect(try await withTimeout(.seconds(20)) { await answer.value } == true)
        } catch {
            // The reader must be done before the defer closes the client's number, which
            // another test's socket could take.
            client.shutdown(reading: true, writing: true)
            _ = try? await drained.value
            throw error
        }
        #expect(connection.queuedBytes < 128 << 10 || connection.queuedBytes == 0)
        _ = try await drained.value
        #expect(connection.waitForRoom(below: 1))  // an empty queue: at once
    }

    @Test func aWaitingSenderIsToldWhenTheConnectionCloses() async throws {
        let (connection, client, _) = try await backedUp(past: 64 << 10)
        defer { client.close() }
        let answer = waitOnAThread(connection, below: 1024)
        try await Task.sleep(for: .milliseconds(100))
        #expect(answer.current == nil)
        connection.close()
        #expect(try await withTimeout(.seconds(20)) { await answer.value } == false)
        #expect(!connection.waitForRoom(below: 1 << 30))
    }

    /// Limits whose half (where `sendIfRoom` stops) is 128 KiB.
    private var smallQueue: Connection.Limits {
        var limits = Connection.Limits()
        limits.maxQueuedBytes = 256 << 10
        return limits
    }

    @Test func aLineWithoutRoomIsNotQueuedAndWaitsUntilThePeerReads() async throws {
        let (connection, client, lines) = try await backedUp(past: 128 << 10, limits: smallQueue)
        defer { connection.close(); client.close() }
        let queued = connection.queuedBytes
        #expect(try connection.sendIfRoom(Array("refused\n".utf8)) == false)
        #expect(connection.queuedBytes == queued)  // nothing queued for it
        let sent = AsyncSignal<Bool>()
        let sender = Task { sent.fulfil(try await connection.sendWhenRoom(Array("last\n".utf8))) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(sent.current == nil)  // held: nothing was read
        #expect(connection.closed.current == nil)
        let received = try await onOwnThread(named: "test-drain") {
            receiveLines(from: client, count: lines + 1, silence: .seconds(20))
        }
        try await sender.value
        #expect(sent.current == true)
        #expect(received.count == lines + 1 && received.last == "last")
        #expect(try connection.sendIfRoom(Array("room\n".utf8)))  // an empty queue: at once
    }

    @Test func aWaitingLineAbandonedOrCancelledIsNeverSentAndTheOthersAre() async throws {
        let (connection, client, lines) = try await backedUp(past: 128 << 10, limits: smallQueue)
        defer { connection.close(); client.close() }
        let wanted = Locked(true)
        let names = ["first", "abandoned", "cancelled", "second", "third"]
        var senders: [Task<Bool, any Error>] = []
        for name in names {
            let abandoned: (@Sendable () -> Bool)? = name == "abandoned" ? { @Sendable in !wanted.withLock { $0 } } : nil
            senders.append(Task { try await connection.sendWhenRoom(Array("\(name)\n".utf8), unless: abandoned) })
            let count = senders.count
            try await awaitState(upTo: .seconds(20)) { connection.room.sleeping == count }
        }
        wanted.withLock { $0 = false }
        let cancelled = senders[2]
        cancelled.cancel()
        // Cancelled: it ends at once, without room.
        #expect(try await withTimeout(.seconds(20)) { try await cancelled.value } == false)
        #expect(connection.room.sleeping == 4)
        let received = try await onOwnThread(named: "test-drain") {
            receiveLines(from: client, count: lines + 3, silence: .seconds(20))
        }
        #expect(Set(received.suffix(3)) == ["first", "second", "third"])
        #expect(try await senders[1].value == false)
        for index in [0, 3, 4] { #expect(try await senders[index].value) }
        // Nothing more came: the abandoned and the cancelled lines never left.
        _ = try connection.sendIfRoom(Array("end\n".utf8))
        #expect(try await onOwnThread(named: "test-drain") { receiveLines(from: client, count: 1, silence: .seconds(20)) } == ["end"])
    }

    @Test func aSenderWaitingForRoomIsToldWhenTheConnectionCloses() async throws {
        let (connection, client, _) = try await backedUp(past: 128 << 10, limits: smallQueue)
        defer { client.close() }
        let waiting = Task { () -> String in
            do { return "\(try await connection.sendWhenRoom(Array("b\n".utf8)))" } catch { return "closed" }
        }
        try await awaitState(upTo: .seconds(20)) { connection.room.sleeping == 1 }
        connection.close()
        #expect(try await withTimeout(.seconds(20)) { await waiting.value } == "closed")
    }

    @Test func theCountersGrowWithWhatIsSentAndRead() async throws {
        let (server, client) = try await loopbackPair()
        defer { client.close() }
        let lines = Counter()
        let connection = Connection(socket: server, peer: "count")
        connection.start(onEvent: { _ in lines.increment() })
        defer { connection.close() }
        #expect(connection.progress.sent == 0 && connection.progress.received == 0)
        try connection.send(Array("hello\n".utf8))
        _ = try await onOwnThread(named: "test-read") { receiveLines(from: client, count: 1, silence: .seconds(10)) }
        #expect(connection.progress.sent == 6)
        _ = try await onOwnThread(named: "test-write") { try client.send(Array("a line\n".utf8), wait: true) }
        try await lines.wait(untilAtLeast: 1, upTo: .seconds(20))
        #expect(connection.progress.received == 7)
    }
}
