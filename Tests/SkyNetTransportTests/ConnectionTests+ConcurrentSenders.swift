import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetLink
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// Threads sending on one connection at once: encrypted frames open in sequence, and a close while
/// threads are inside `send` ends every sender and keeps what arrived whole and in order.
extension ConnectionTests {
    struct Pair {
        let sender: Connection
        let receiver: Connection
        /// What the receiver got: its lines, and why it closed once it has.
        let received: Watched<Received>
        var lines: [String] { received.value.lines }
        var closedReason: Connection.CloseReason? { received.value.closedReason }
    }

    struct Received {
        var lines: [String] = []
        var closedReason: Connection.CloseReason?
        /// Called for each line, after it was kept.
        var onLine: @Sendable () -> Void = {}
    }

    func makePair(authenticated: Bool, smallBuffers: Bool) async throws -> Pair {
        let (server, client) = try await loopbackPair()
        if smallBuffers {
            server.setBufferSizes(send: 16384, receive: 16384)
            client.setBufferSizes(send: 16384, receive: 16384)
        }
        var limits = Connection.Limits()
        limits.maxQueuedBytes = 256 << 20
        let sender = Connection(socket: server, peer: "sender", limits: limits)
        let receiver = Connection(socket: client, peer: "receiver", limits: limits)
        let received = Watched(Received())
        if authenticated {
            let up = [UInt8](repeating: 1, count: 32), down = [UInt8](repeating: 2, count: 32)
            sender.encrypt(with: (send: NoiseCipher(key: up), receive: NoiseCipher(key: down)))
            receiver.encrypt(with: (send: NoiseCipher(key: down), receive: NoiseCipher(key: up)))
        }
        sender.start(onEvent: { _ in })
        receiver.start(onEvent: { event in
            guard case .line(let line) = event else { return }
            let onLine = received.update { received in
                received.lines.append(String(decoding: line, as: UTF8.self))
                return received.onLine
            }
            onLine()
        }, onClose: { why in received.update { $0.closedReason = why } })
        return Pair(sender: sender, receiver: receiver, received: received)
    }

    /// Per-sender order and integrity of `lines` ("sender index padding").
    func problems(in lines: [String], senders: Int) -> [String] {
        var next = [Int](repeating: 0, count: senders), problems: [String] = []
        for line in lines {
            let words = line.split(separator: " ")
            guard words.count == 3, let sender = Int(words[0]), let index = Int(words[1]), next.indices.contains(sender)
            else { problems.append("garbled: \(line.prefix(60))"); continue }
            if index != next[sender] { problems.append("sender \(sender): got \(index), expected \(next[sender])") }
            next[sender] = index + 1
        }
        return problems
    }

    @Test(arguments: [true, false])
    func sealedLinesFromConcurrentThreadsAllOpenInSequence(smallBuffers: Bool) async throws {
        let pair = try await makePair(authenticated: true, smallBuffers: smallBuffers)
        defer { pair.sender.close(); pair.receiver.close() }
        let senders = 6, each = underThreadSanitizer ? 500 : 3000  // each line is sealed and opened
        let padding = String(repeating: "p", count: 40)
        let done = DispatchGroup()
        for sender in 0..<senders {
            done.enter()
            startThread(named: "test-sender") {
                for index in 0..<each { try? pair.sender.send(Array("\(sender) \(index) \(padding)\n".utf8)) }
                done.leave()
            }
        }
        try await pair.received.wait(upTo: .seconds(60)) { $0.lines.count == senders * each || $0.closedReason != nil }
        #expect(pair.closedReason == nil, "receiver closed: \(String(describing: pair.closedReason))")
        let lines = pair.lines
        #expect(lines.count == senders * each)
        let found = problems(in: lines, senders: senders)
        #expect(found.isEmpty, "\(found.prefix(5))")
        _ = try await onOwnThread(named: "test-wait") { done.wait(timeout: .now() + 10) }
    }

    /// Senders inside `send` while the connection closes: each either sends or learns it is
    /// closed, nothing crashes, what arrives is whole and in order, the connection ends.
    @Test func closingWhileThreadsAreInsideSendEndsEveryoneAndKeepsWhatArrivedInOrder() async throws {
        for round in 0..<6 {
            let pair = try await makePair(authenticated: round.isMultiple(of: 2), smallBuffers: round % 3 == 0)
            defer { pair.receiver.close() }
            let senders = 6
            let refused = Counter()
            let ended = DispatchGroup()
            let padding = String(repeating: "q", count: 100)
            // Senders keep at most `window` lines on their way: each takes a credit before it
            // sends and the receiver gives one back per line. Without it six threads that never
            // wait queued lines as fast as they could, tens of megabytes, all read and opened
            // before the close could end: under the thread sanitizer, beside the other suites,
            // that took longer than the close's bound, and the spinning threads starved them.
            let window = 512
            // Made empty and given its credits: a semaphore freed below the value it was made
            // with traps in libdispatch.
            let credits = DispatchSemaphore(value: 0)
            for _ in 0..<window { credits.signal() }
            pair.received.update { $0.onLine = { credits.signal() } }
            // Once closed, every send throws: one credit each lets the senders that wait learn it
            // (on every path, so that no thread is left waiting).
            defer {
                pair.sender.close()
                for _ in 0..<senders { credits.signal() }
            }
            for sender in 0..<senders {
                ended.enter()
                startThread(named: "test-sender") {
                    var index = 0
                    while true {
                        credits.wait()
                        do { try pair.sender.send(Array("\(sender) \(index) \(padding)\n".utf8)) } catch {
                            refused.increment()
                            break
                        }
                        index += 1
                        if index > 2_000_000 { break }
                    }
                    ended.leave()
                }
            }
            // Lines arriving before the close; fewer under the sanitizer, where sealing is slow.
            let arrived = underThreadSanitizer ? 300 : 2000
            try await pair.received.wait(upTo: .seconds(60)) { $0.lines.count >= arrived }
            pair.sender.close()
            for _ in 0..<senders { credits.signal() }
            let closed = try await withTimeout(.seconds(10)) { await pair.sender.closed.value }
            #expect("\(closed)" == "closed")
            let allEnded = try await onOwnThread(named: "test-wait") { ended.wait(timeout: .now() + 10) == .success }
            #expect(allEnded)
            #expect(refused.value == senders)
            try await pair.received.wait(upTo: .seconds(10)) { $0.closedReason != nil }
            let found = problems(in: pair.lines, senders: senders)
            #expect(found.isEmpty, "round \(round): \(found.prefix(5))")
            if case .unauthenticated? = pair.closedReason { Issue.record("round \(round): a sealed line failed to open") }
        }
    }
}
