import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// Login throttling over real connections from many loopback addresses:
/// addresses of one network share one slowdown, many networks meet a node-wide bound, and the
/// log says each burst, not each guess.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeLoginThrottleTests {
    let auth = AuthHandshakeTests()

    /// One version 2 hello from `source` whose handshake is made with a wrong token: the node's
    /// answer (the error's code, `handshake` if it took the token, `nothing` if it closed
    /// without a word), and how long it took.
    static func wrongLogin(from source: String, port: Int) throws -> (answer: String, took: Duration) {
        let clock = ContinuousClock(), start = clock.now
        let socket = try connectFrom(source, toPort: port)
        defer { socket.close() }
        let answer: String
        do {
            _ = try EncryptedClient(socket: socket, token: wrong, name: "guess")
            answer = "handshake"
        } catch let refused as EncryptedClient.Refused {
            answer = jsonFields(refused.line)?["code"] as? String ?? "nothing"
        }
        return (answer, clock.now - start)
    }

    static let wrong = "not the token, but just as long"

    /// Four wrong guesses from four addresses of 127.0.0.0/24 slow down a fifth address of it,
    /// not an address of another network.
    @Test func addressesOfOneNetworkShareOneSlowdown() async throws {
        try await auth.withTokenNode { node, log in
            let port = node.port
            let answers = try await onOwnThread(named: "test-guess") { () throws -> [(answer: String, took: Duration)] in
                try (2...6).map { try Self.wrongLogin(from: "127.0.0.\($0)", port: port) }
                    + [Self.wrongLogin(from: "127.0.1.2", port: port)]
            }
            #expect(answers.allSatisfy { $0.answer == "unauthorized" }, "\(answers)")
            #expect(answers[4].took >= .milliseconds(200), "the 5th guess from 127.0.0.0/24 came after \(answers[4].took)")
            #expect(answers[5].took < .milliseconds(1500), "another network was held \(answers[5].took)")
            try await log.waitFor("[Node] 4 failed logins from 127.0.0.0/24 within 60 s: its hellos are now answered after 0.25 s")
        }
    }

    /// Guesses from 8 workers, each from a network of its own every time (127.1.N.1), for 3 s:
    /// past the node-wide burst every hello waits 2 s, so few get through; the log holds a few
    /// lines, not one per guess.
    @Test func manyNetworksMeetANodeWideBoundAndAreLoggedPerBurst() async throws {
        var backoff = LoginBackoff()
        // Drained at 1 a second, not 8: the free guesses are the burst, however slowly a busy
        // machine makes them (each is a handshake; the drain has a test of its own).
        backoff.nodeWideFailuresPerSecond = 1
        try await auth.withTokenNode(backoff: backoff) { node, log in
            let port = node.port, next = Counter(), answered = Counter()
            let stop = ContinuousClock.now + .seconds(3)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await onOwnThread(named: "test-guess") {
                            while ContinuousClock.now < stop {
                                next.increment()
                                let n = next.value
                                let source = "127.1.\(n % 250).\(1 + n / 250 % 250)"
                                if try Self.wrongLogin(from: source, port: port).answer == "unauthorized" {
                                    answered.increment()
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // 32 in the burst, then at most 8 workers x 2 waits of 2 s (and a drained few).
            #expect(answered.value <= 80, "\(answered.value) wrong guesses answered in 3 s from \(next.value) tries")
            #expect(answered.value >= 20)
            let lines = log.all.filter { $0.contains("failed logins") || $0.contains("[Node] Refused") }
            // The burst's refusals one by one (32, and a drained few), then a line for the rest.
            #expect(lines.count <= 40, "\(lines.count) log lines for \(answered.value) guesses: \(lines.suffix(20))")
            #expect(log.matching("from any networks").count >= 1, "\(lines.suffix(3))")
        }
    }
}
