import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

/// The floor W5 is measured against: a blocking echo of one line between two processes over
/// loopback, with nothing of SkyNet on the path but the socket calls.
enum PingPong {
    /// The child's side: accept one connection and echo every byte back until it closes.
    static func serve() throws {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(try listener.localAddress().port)\n".utf8))
        let (connection, _) = try listener.accept()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try connection.receive(into: $0) }
            if count == 0 { break }
            var offset = 0
            while offset < count { offset += try connection.send(Array(buffer[offset..<count]), wait: true) }
        }
        connection.close()
        listener.close()
    }

    /// Round trips of a 64-byte line, in microseconds, against an echo child.
    static func measure(bench: URL, rounds: Int) throws -> [Double] {
        var options = ChildProcess.Options(arguments: ["echo-server"])
        options.stdout = .lines(maxLength: 4096, keep: 4)
        let child = try ChildProcess.spawn(bench.path, options)
        defer { _ = try? blocking { await child.stop(grace: .seconds(1)) } }
        let line = try blocking { try await child.waitForLine(timeout: .seconds(10)) { _ in true } }
        guard let port = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        else { throw BenchError("echo server said \(line)") }
        let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
        defer { socket.close() }
        let message = [UInt8](repeating: UInt8(ascii: "x"), count: 63) + [10]
        var buffer = [UInt8](repeating: 0, count: 4096)
        var samples: [Double] = []
        samples.reserveCapacity(rounds)
        let clock = ContinuousClock()
        for round in 0..<(rounds + rounds / 10) {
            let start = clock.now
            _ = try socket.send(message, wait: true)
            var received = 0
            while received < message.count {
                received += try buffer.withUnsafeMutableBytes { try socket.receive(into: $0) }
            }
            if round >= rounds / 10 { samples.append((clock.now - start).seconds * 1e6) }  // after warm-up
        }
        return samples
    }
}
