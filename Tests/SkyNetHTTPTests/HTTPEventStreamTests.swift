import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetHTTP
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// The dashboard's Server-Sent Events stream: format, order, snapshot first, slow clients.
@Suite(.timeLimit(.minutes(3)))
struct HTTPEventStreamTests {
    typealias Frame = EventStreamReader.Frame

    @Test func aNewClientGetsTheLatestSnapshotFirstThenEveryFrameInOrder() async throws {
        try await withHTTPServer { server in
            try server.publish(event: "state", data: #"{"n":1}"#, snapshot: true)
            try server.publish(event: "task", data: #"{"seq":-1}"#)  // before the client: never seen
            try server.publish(event: "state", data: #"{"n":2}"#, snapshot: true)
            let socket = try await EventStreamReader.open(server)
            defer { socket.close() }
            let (firstBytes, first) = try await onOwnThread(named: "test-sse-first") { () -> ([UInt8], (frames: [Frame], comments: [String])) in
                let bytes = HTTPClientForTests.read(socket, silence: .seconds(20)) { EventStreamReader.frames($0).frames.count >= 1 }
                return (bytes, EventStreamReader.frames(bytes))
            }
            #expect(firstBytes.starts(with: HTTPResponse.eventStreamHead))
            #expect(first.frames == [Frame(event: "state", data: #"{"n":2}"#)])
            // The client holds the snapshot, so it is registered: everything from here reaches it.
            for seq in 0..<200 { try server.publish(event: "task", data: #"{"seq":\#(seq)}"#) }
            try server.publish(event: "note", data: "two\nlines")
            let rest = try await EventStreamReader.read(socket) { $0.count >= 201 }
            #expect(rest.comments.isEmpty, "\(rest.comments)")
            #expect(rest.frames.dropLast().map(\.data) == (0..<200).map { #"{"seq":\#($0)}"# })
            #expect(rest.frames.last == Frame(event: "note", data: "two\nlines"))
        }
    }

    /// A hundred browsers on the stream, none reading between frames: they wait on the event
    /// loops, with no thread each, and each gets every frame, in order.
    @Test func aHundredStreamsHoldNoThreadAndEachGetsEveryFrame() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.maxClientsPerAddress = 128
        try await withHTTPServer(configuration) { server in
            try server.publish(event: "state", data: "{}", snapshot: true)
            var sockets: [Socket] = []
            defer { for socket in sockets { socket.close() } }
            for _ in 0..<100 {
                let socket = try await EventStreamReader.open(server)
                sockets.append(socket)
                _ = try await EventStreamReader.read(socket) { $0.count >= 1 }  // registered
            }
            let streamThreads = threadNames().filter { $0.hasPrefix("skynet-http") }.count
            #expect(streamThreads == 0, "\(streamThreads) threads for 100 streams")
            for seq in 0..<50 { try server.publish(event: "task", data: #"{"seq":\#(seq)}"#) }
            var complete = 0
            for socket in sockets {
                let frames = try await EventStreamReader.read(socket) { $0.count >= 50 }.frames
                if frames.map(\.data) == (0..<50).map({ #"{"seq":\#($0)}"# }) { complete += 1 }
            }
            #expect(complete == 100)
        }
    }

    @Test func stoppingWithGraceFirstDeliversWhatWasPublished() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.streamBufferBytes = 64 << 20
        let server = try await HTTPServer.start(configuration, routes: testRoutes)
        try server.publish(event: "state", data: "{}", snapshot: true)
        let socket = try await EventStreamReader.open(server)
        defer { socket.close() }
        _ = try await EventStreamReader.read(socket) { $0.count >= 1 }  // it holds the snapshot: registered
        // Far more than the socket buffers hold while the client does not read yet: without
        // the grace, the stop cuts the connection before the last of it is sent.
        let padding = String(repeating: "x", count: 200_000)
        for index in 0..<100 { try server.publish(event: "final", data: "\(index) \(padding)") }
        let stopping = Task { await server.stop(grace: .seconds(20)) }
        // Read to the end once (the server closes the stream after the last frame).
        let rest = EventStreamReader.frames(try await onOwnThread(named: "test-sse-rest") { HTTPClientForTests.readToEnd(socket, silence: .seconds(20)) })
        await stopping.value
        #expect(rest.frames.map { $0.data.prefix { $0 != " " } } == (0..<100).map { "\($0)"[...] })
        #expect(server.clientCount == 0)
    }

    @Test func headOnTheStreamSendsItsHeadAndCloses() async throws {
        try await withHTTPServer { server in
            try server.publish(event: "state", data: "{}", snapshot: true)
            let bytes = try await HTTPClientForTests.exchange(server, "HEAD /events HTTP/1.1\r\n\r\n")
            #expect(bytes == HTTPResponse.eventStreamHead)
            let head = String(decoding: bytes, as: UTF8.self)
            #expect(head.contains("Content-Type: text/event-stream\r\n") && head.contains("Cache-Control: no-store\r\n"))
        }
    }

    @Test func anIdleStreamGetsKeepaliveComments() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.keepaliveInterval = .milliseconds(200)
        try await withHTTPServer(configuration) { server in
            let socket = try await EventStreamReader.open(server)
            defer { socket.close() }
            let bytes = try await onOwnThread(named: "test-keepalive") {
                HTTPClientForTests.read(socket, silence: .seconds(20)) { EventStreamReader.frames($0).comments.count >= 2 }
            }
            // At least two (a reader starved on a loaded machine finds more waiting at once).
            let comments = EventStreamReader.frames(bytes).comments
            #expect(comments.count >= 2 && comments.allSatisfy { $0 == ": keepalive" }, "\(comments)")
        }
    }

    @Test func aFrameOverTheLimitIsRefused() async throws {
        try await withHTTPServer { server in
            let data = String(repeating: "x", count: server.configuration.maxFrameBytes)
            #expect(throws: HTTPServerError.self) { try server.publish(event: "state", data: data) }
        }
    }

    /// A client that never reads while 10,000 frames of 4 KiB (40 MB, more than the kernel's
    /// buffers hold) are published: publish never waits, the client's backlog stays within
    /// its 64 KiB bound, and when it reads at last it has skipped forward to the newest frame.
    @Test func aClientThatNeverReadsSkipsToTheNewestSnapshotAndNeverSlowsThePublisher() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.streamBufferBytes = 64 * 1024
        configuration.maxFrameBytes = 8 * 1024
        try await withHTTPServer(configuration) { server in
            try server.publish(event: "state", data: #"{"seq":-1}"#, snapshot: true)
            let socket = try await EventStreamReader.open(server)
            defer { socket.close() }
            _ = try await EventStreamReader.read(socket) { $0.count >= 1 }
            let padding = String(repeating: "p", count: 4000)
            let clock = ContinuousClock()
            var slowest = Duration.zero, largestBacklog = 0
            let start = clock.now
            for seq in 0..<10_000 {
                let before = clock.now
                try server.publish(event: "state", data: #"{"seq":\#(seq),"pad":"\#(padding)"}"#, snapshot: true)
                slowest = max(slowest, clock.now - before)
                if seq % 100 == 0 { largestBacklog = max(largestBacklog, Self.backlog(server).bytes) }
            }
            let total = clock.now - start
            print("10,000 publishes to a stalled client: \(total) in all, slowest \(slowest), largest backlog \(largestBacklog) bytes")
            #expect(total < .seconds(60), "publishing took \(total)")
            #expect(largestBacklog <= 64 * 1024)
            #expect(Self.backlog(server).skips > 0)
            let received = try await EventStreamReader.read(socket) { $0.last?.data.hasPrefix(#"{"seq":9999,"#) == true }
            let seqs = received.frames.compactMap { frame -> Int? in
                guard let range = frame.data.range(of: #"^\{"seq":(-?\d+)"#, options: .regularExpression) else { return nil }
                return Int(frame.data[range].dropFirst(7))
            }
            #expect(seqs.count == received.frames.count)
            #expect(seqs.last == 9999)
            #expect(seqs.count < 10_000, "the client was not skipped forward")
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "frames out of order")
            #expect(received.comments.contains { $0.hasPrefix(": skipped ") })
        }
    }

    /// A client that ends its side once its request is out (some command-line clients do)
    /// still gets every frame: the end of its sending is not the end of the stream.
    @Test func aClientThatHalfClosesAfterItsRequestKeepsItsStream() async throws {
        try await withHTTPServer { server in
            try server.publish(event: "state", data: "{}", snapshot: true)
            let socket = try await EventStreamReader.open(server)
            defer { socket.close() }
            socket.shutdown(reading: false, writing: true)
            _ = try await EventStreamReader.read(socket) { $0.count >= 1 }
            for seq in 0..<3 { try server.publish(event: "task", data: "\(seq)") }
            let frames = try await EventStreamReader.read(socket) { $0.count >= 3 }.frames
            #expect(frames.map(\.data) == ["0", "1", "2"])
            #expect(server.clientCount == 1)
        }
    }

    /// A stream's client that takes no byte while frames wait for it is cut at the stall
    /// deadline, and its slot is free; a client that reads is never cut. (Without the cut, 128
    /// streams that never read hold every stream slot for as long as they stay.)
    @Test func aStreamWhoseClientTakesNothingIsCutAtTheStallDeadline() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.streamStallDeadline = .seconds(1)
        let lines = Locked<[String]>([])
        configuration.log = { line in lines.withLock { $0.append(line) } }
        try await withHTTPServer(configuration) { server in
            try server.publish(event: "state", data: "{}", snapshot: true)
            let stalled = try await EventStreamReader.open(server)
            defer { stalled.close() }
            _ = try await EventStreamReader.read(stalled) { $0.count >= 1 }  // registered
            let reading = try await EventStreamReader.open(server)
            defer { reading.close() }
            _ = try await EventStreamReader.read(reading) { $0.count >= 1 }
            let keepReading = Task {
                try await onOwnThread(named: "test-sse-keep-reading") { () -> Int in
                    // Reads and drops (the frames add up to hundreds of MB at most).
                    reading.setReceiveTimeout(.seconds(60))
                    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
                    defer { chunk.deallocate() }
                    var total = 0
                    while let count = try? reading.receive(into: chunk), count > 0 { total += count }
                    return total
                }
            }
            // Frames of 200 KB every 10 ms until the stalled one is cut (the kernel's buffers
            // fill within a second or two), for at most 30 s.
            let padding = String(repeating: "p", count: 200_000)
            let clock = ContinuousClock()
            let start = clock.now
            while server.clientCount > 1, clock.now - start < .seconds(30) {
                try server.publish(event: "state", data: padding)
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.clientCount == 1, "the stream that takes nothing was not cut")
            #expect(lines.withLock { $0 }.contains { $0.contains("took nothing") })
            reading.shutdown(reading: true, writing: true)
            _ = try await keepReading.value
        }
    }

    static func backlog(_ server: HTTPServer) -> (bytes: Int, skips: Int) {
        server.state.withLock { state in
            state.clients.values.reduce((0, 0)) { sum, client in
                guard case .streaming(let stream) = client.stage else { return sum }
                let backlog = stream.backlog
                return (max(sum.0, backlog.bytes), sum.1 + backlog.skips)
            }
        }
    }
}
