import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime
@testable import SkyNetTransport
import SkyNetTestSupport


@Suite(.serialized, .timeLimit(.minutes(3)))
struct ConnectionTests {
    /// The lost-line race: the flusher, finding the queue empty, must not
    /// erase bytes that a send queued just after. Senders race a reader that first stalls
    /// (the small kernel buffers fill, sends queue) and then drains while they still send, so
    /// the flusher empties its queue and exits many times under their feet.
    @Test func everyLineFromConcurrentSendersArrivesOnceAndInOrderThroughStallsAndDrains() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["SKYNET_STRESS_ROUNDS"] ?? "") ?? 12
        for round in 0..<rounds {
            let problems = try await sendThroughAStall(senders: 8, linesEach: 2000)
            #expect(problems.isEmpty, "round \(round): \(problems.prefix(5))")
            if !problems.isEmpty { return }
        }
    }

    private func sendThroughAStall(senders: Int, linesEach: Int) async throws -> [String] {
        let (server, client) = try await loopbackPair()
        defer { client.close() }
        server.setBufferSizes(send: 32768, receive: 32768)
        client.setBufferSizes(send: 32768, receive: 32768)
        var limits = Connection.Limits()
        limits.maxQueuedBytes = 256 << 20
        let connection = Connection(socket: server, peer: "test", limits: limits)
        connection.start(onEvent: { _ in })
        defer { connection.close() }

        let yieldEvery = Int(ProcessInfo.processInfo.environment["SKYNET_STRESS_YIELD"] ?? "") ?? 16
        let total = senders * linesEach
        let halfway = Counter(), stalled = DispatchSemaphore(value: 0)
        let reader = Task {
            try await onOwnThread(named: "test-drain") {
                stalled.wait()  // the reader stalls until every sender is a quarter through
                return receiveLines(from: client, count: total, silence: .seconds(30))  // a hang guard: a pause of 5 s was seen in a loaded run
            }
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<senders {
                    group.addTask {
                        let padding = String(repeating: ".", count: 60)
                        for index in 0..<linesEach {
                            try connection.send(Array("\(sender) \(index) \(padding)\n".utf8))
                            if index == linesEach / 4 {
                                halfway.increment()
                                if halfway.value == senders { stalled.signal() }
                            }
                            if index.isMultiple(of: yieldEvery) { await Task.yield() }
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            // The reader still holds the client's number: it must be done before the defer
            // closes it, or its next read could take another test's socket by that number.
            stalled.signal()
            client.shutdown(reading: true, writing: true)
            _ = try? await reader.value
            throw error
        }
        let received = try await reader.value
        var next = [Int](repeating: 0, count: senders)
        var problems: [String] = []
        for line in received {
            let words = line.split(separator: " ")
            guard words.count == 3, let sender = Int(words[0]), let index = Int(words[1]),
                  next.indices.contains(sender) else { problems.append("garbled: \(line.prefix(40))"); continue }
            if index != next[sender] { problems.append("sender \(sender): got \(index), expected \(next[sender])") }
            next[sender] = index + 1
        }
        if received.count != total { problems.append("\(received.count) of \(total) lines arrived") }
        return problems
    }
}
