import Foundation
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// A pair of pipes (an ssh link, `--stdio`) is read on the event loops as a socket is: many
/// of them start no reader thread each; each still answers, and each sees its peer close.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionPairLoopTests {
    @Test func aHundredPipeLinksStartNoReaderThreadEachAndEachAnswersAndEnds() async throws {
        let count = min(100, (DescriptorLimit.raiseToMaximum() - 256) / 8)
        try #require(count >= 50, "too few descriptors for the test")
        var links: [(connection: Connection, toUs: Int32, fromUs: Int32)] = []
        let closed = Locked(0)
        for _ in 0..<count {
            let toUs = try ChildProcess.makePipe(), fromUs = try ChildProcess.makePipe()
            let connection = Connection(stream: try DescriptorPair(reading: toUs.read, writing: fromUs.write), peer: "pipes")
            connection.start(onEvent: { event in
                guard case .line(let line) = event else { return }
                try? connection.send(Array(line) + Array("!\n".utf8))
            }, onClose: { _ in closed.withLock { $0 += 1 } })
            links.append((connection, toUs.write, fromUs.read))
        }
        defer {
            for link in links {
                link.connection.close()
                close(link.fromUs)
            }
        }
        let ends = links.map { ($0.toUs, $0.fromUs) }
        let answered = try await onOwnThread(named: "test-pipes") { () -> Int in
            var answered = 0
            for (index, (toUs, fromUs)) in ends.enumerated() {
                let line = Array("ping \(index)\n".utf8)
                guard write(toUs, line, line.count) == line.count else { continue }
                var polled = pollfd(fd: fromUs, events: Int16(POLLIN), revents: 0)
                guard poll(&polled, 1, 10_000) == 1 else { continue }
                var buffer = [UInt8](repeating: 0, count: 64)
                let got = read(fromUs, &buffer, buffer.count)
                if got > 0, String(decoding: buffer.prefix(got), as: UTF8.self) == "ping \(index)!\n" { answered += 1 }
            }
            return answered
        }
        #expect(answered == count)
        // A reader thread each made `count` of them; other suites beside this one keep some.
        let readers = threadNames().filter { $0.hasPrefix("skynet-reader") }.count
        #expect(readers < 30, "\(readers) reader threads for \(count) pipe links")
        // Each peer closes its end: each connection ends.
        for link in links { close(link.toUs) }
        try await awaitState(upTo: .seconds(20)) { closed.withLock { $0 } == count }
    }

    /// Twenty pipe links each send 1 MiB to a peer that reads nothing yet (a pipe holds 64 KiB):
    /// the loops send what waits as the pipes drain, with no flusher thread each, and every
    /// byte arrives in order once the peers read.
    @Test func writesThatWaitOnPipesAreSentByTheLoopsInOrder() async throws {
        let count = 20
        var links: [(connection: Connection, toUs: Int32, fromUs: Int32)] = []
        for _ in 0..<count {
            let toUs = try ChildProcess.makePipe(), fromUs = try ChildProcess.makePipe()
            let connection = Connection(stream: try DescriptorPair(reading: toUs.read, writing: fromUs.write), peer: "pipes")
            connection.start(onEvent: { _ in }, onClose: { _ in })
            links.append((connection, toUs.write, fromUs.read))
        }
        defer {
            for link in links {
                link.connection.close()
                close(link.toUs)
                close(link.fromUs)
            }
        }
        let lines = (0..<256).map { index in Array("\(index) ".utf8) + [UInt8](repeating: 120, count: 4090) + [10] }
        for link in links {
            for line in lines { try link.connection.send(line) }
        }
        let flushers = threadNames().filter { $0.hasPrefix("skynet-flusher") }.count
        // A flusher thread each made `count` of them; other suites beside this one may keep a few.
        #expect(flushers < 10, "\(flushers) flusher threads for \(count) pipe links whose writes wait")
        let expected = lines.flatMap { $0 }
        let ends = links.map(\.fromUs)
        let whole = try await onOwnThread(named: "test-pipe-drain") { () -> Int in
            var whole = 0
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            for fromUs in ends {
                var received: [UInt8] = []
                received.reserveCapacity(expected.count)
                var polled = pollfd(fd: fromUs, events: Int16(POLLIN), revents: 0)
                while received.count < expected.count, poll(&polled, 1, 10_000) == 1 {
                    let got = read(fromUs, &buffer, buffer.count)
                    guard got > 0 else { break }
                    received += buffer.prefix(got)
                }
                if received == expected { whole += 1 }
            }
            return whole
        }
        #expect(whole == count)
    }
}
