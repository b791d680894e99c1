import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// A reader that stops reading stdout makes the scan wait, loses nothing, and does not
    /// delay timeouts on other systems.
    @Suite struct StalledOutputTests {
        @Test func aStalledStdoutLosesNothingAndTimeoutsStillFire() async throws {
            try await withCluster(nodes: 2, nodeArguments: ["--failing-every", "0"]) { cluster in
                try cluster.writeClusterFile(timeout: 1)
                let total = 6000
                var options = ChildProcess.Options(arguments: [
                    "scan", "--cluster", cluster.clusterFile, "--json", "--total", String(total), "--duration", "0.01",
                    "--failing-every", "0", "--local-capacity", "16",
                ])
                options.stdout = .pipe
                let scan = try ChildProcess.spawn(skynetBinary.path, options)
                let reader = try #require(scan.takeOutputPipe(1)).map { StallableReader(fd: $0) }
                defer { scan.send(SIGKILL) }
                let gamma = try #require(cluster.node("gamma"))

                _ = try await withTimeout(.seconds(30)) {
                    await reader.log.first { $0.contains(#""event":"completed""#) && $0.contains(#""system":"gamma""#) }
                }
                reader.pause()
                let stoppedAt = ContinuousClock.now
                gamma.send(SIGSTOP)
                try await Task.sleep(for: .seconds(5))  // the stall itself, not an ordering
                reader.resume()
                _ = try await withTimeout(.seconds(120)) { await scan.exit.value }
                _ = try await withTimeout(.seconds(10)) { await reader.log.closed() }
                gamma.send(SIGCONT)

                let events = reader.log.lines.compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                let completed = events.filter { $0["event"] as? String == "completed" }
                #expect(Set(completed.compactMap { $0["input"] as? Int }) == Set(0..<total))
                #expect(events.last?["event"] as? String == "summary")
                // The scan waited for its output: a gap of seconds between events made.
                let times = completed.compactMap { $0["time"] as? Double }
                #expect(zip(times, times.dropFirst()).contains { $1 - $0 > 2 })
                // Scan time of the SIGSTOP, from the earliest-read line (reading lags making).
                let offset = reader.offsets(events: events).min() ?? 0
                let stopTime = (stoppedAt - reader.origin).seconds - offset
                let unresponsive = try #require(events.first {
                    $0["event"] as? String == "unresponsive" && $0["system"] as? String == "gamma"
                })
                let markedAt = try #require(unresponsive["time"] as? Double)
                #expect(markedAt <= stopTime + 1 + 1, "marked at \(markedAt), stopped at \(stopTime)")
            }
        }
    }
}

/// Reads a pipe into a `LineLog` on a thread of its own, and can stop reading for a while.
final class StallableReader: Sendable {
    let log = LineLog(keep: 1_000_000)
    let origin = ContinuousClock.now
    private let paused = Locked(false)
    /// When each line was read, in seconds since `origin`.
    private let readTimes = Locked<[Double]>([])

    init(fd: Int32) {
        startThread(named: "stallable-reader") { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            var line: [UInt8] = []
            while true {
                while paused.withLock({ $0 }) { usleep(10_000) }
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                for byte in buffer[0..<count] {
                    guard byte == 10 else { line.append(byte); continue }
                    let now = (ContinuousClock.now - origin).seconds
                    readTimes.withLock { $0.append(now) }
                    log.append(String(decoding: line, as: UTF8.self))
                    line = []
                }
            }
            close(fd)
            log.close()
        }
    }

    func pause() { paused.withLock { $0 = true } }
    func resume() { paused.withLock { $0 = false } }

    /// For each event with a time: when it was read minus when it was made.
    func offsets(events: [[String: Any]]) -> [Double] {
        let times = readTimes.withLock { $0 }
        return zip(times, events).compactMap { read, event in (event["time"] as? Double).map { read - $0 } }
    }
}

private extension Int32 {
    func map<T>(_ transform: (Int32) -> T) -> T { transform(self) }
}
