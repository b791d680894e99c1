import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import Testing

extension ProcessTests {
    /// A node whose stderr nobody reads keeps serving: its log lines are dropped and counted,
    /// never waited for by the threads that accept, read or scan.
    @Suite(.timeLimit(.minutes(4)))
    struct UnreadStderrTests {
        /// Long client names make each round log ~600 bytes: 2,000 rounds are far more than the
        /// pipe (64 KiB) and the node's output queue (256 KiB) hold together.
        static let clientName = "unread-stderr-" + String(repeating: "x", count: 110)
        static let rounds = 2000
        static let scans = 300

        @Test func aNodeWhoseStderrIsNotReadStillWelcomesAndAnswersEveryone() async throws {
            var options = ChildProcess.Options(
                arguments: ["node", "--port", "0", "--verbose", "--failing-every", "0"],
                environment: ProcessInfo.processInfo.environment)
            options.stdout = .lines()
            options.stderr = .pipe  // taken below and not read until the load is over
            let node = try ChildProcess.spawn(skynetBinary.path, options)
            let stderr = try #require(node.takeOutputPipe(2))
            var reader: StallableReader?
            defer {
                node.send(SIGKILL)
                if reader == nil { close(stderr) }
            }
            let listening = try await node.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("listening on ") }
            let port = try #require(listening.split(separator: ":").last.flatMap { Int($0) })
            let hello = #"{"type":"hello","version":1,"name":"\#(Self.clientName)"}"#

            // Connect, hello, ping, close, again and again: each round logs two long lines.
            var welcomed = 0, ponged = 0
            for round in 0..<Self.rounds {
                let client = try await RawLineClient(port: port)
                let welcome: [String: Any]?
                do { welcome = try await client.exchange(hello) } catch {
                    Issue.record("round \(round): no welcome (\(error))")
                    return
                }
                try #require(welcome?["type"] as? String == "welcome", "round \(round): \(String(describing: welcome))")
                welcomed += 1
                let pong = try await client.exchange(#"{"type":"ping","id":\#(round)}"#)
                if pong?["type"] as? String == "pong" { ponged += 1 }
                client.close()
            }
            #expect(welcomed == Self.rounds)
            #expect(ponged == Self.rounds)

            // Scans with --verbose: each logs a line from a task on the pool.
            let scanner = try await RawLineClient(port: port, first: hello)
            #expect(try await scanner.receive()?["type"] as? String == "welcome")
            var answered = 0
            for id in 0..<Self.scans {
                let task = UUID().uuidString.lowercased()
                let reply = try await scanner.exchange(
                    #"{"type":"scan","id":\#(id),"task":{"id":"\#(task)","input":\#(id),"duration":0}}"#)
                if reply?["type"] as? String == "result", reply?["id"] as? Int == id { answered += 1 }
            }
            #expect(answered == Self.scans)
            scanner.close()

            // Now read the pipe: room returns, and the node says how many lines it dropped.
            let log = StallableReader(fd: stderr)
            reader = log
            let notice = try await withTimeout(.seconds(30)) {
                await log.log.first { $0.contains("log lines dropped") }
            }
            let dropped = try #require(notice.flatMap(Self.droppedCount))
            #expect(dropped > 0)

            node.send(SIGTERM)
            let exit = try await withTimeout(.seconds(30)) { await node.exit.value }
            #expect(exit.status == 0)
            _ = try await withTimeout(.seconds(10)) { await log.log.closed() }

            // Every line is either written whole or counted as dropped.
            let lines = log.log.lines
            let logged = lines.filter {
                $0.hasPrefix("[Node] Connected: ") || $0.hasPrefix("[Node] Disconnected: ") || $0.hasPrefix("[Node] Task ")
            }.count
            let counted = lines.compactMap(Self.droppedCount).reduce(0, +)
            #expect(logged + counted == 2 * (Self.rounds + 1) + Self.scans, "\(logged) written, \(counted) dropped")
            #expect(lines.allSatisfy { $0.hasPrefix("[Node] ") }, "\(lines.filter { !$0.hasPrefix("[Node] ") }.prefix(3))")
        }

        /// N in `[Node] N log lines dropped: …`.
        static func droppedCount(_ line: String) -> Int? {
            guard line.contains("log lines dropped") else { return nil }
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
    }
}
