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

    /// One v1 hello with `token` in plain text from `source`: the first reply's type or code,
    /// and how long it took.
    static func plainLogin(from source: String, port: Int, token: String) throws -> (answer: String, took: Duration) {
        let clock = ContinuousClock(), start = clock.now
        var client = RawLines(socket: try connectFrom(source, toPort: port))
        defer { client.close() }
        try client.send(#"{"type":"hello","version":1,"name":"guess","token":"\#(token)"}"#)
        let reply = client.readLine().flatMap(jsonFields)
        return ((reply?["code"] as? String) ?? (reply?["type"] as? String) ?? "nothing", clock.now - start)
    }

    static let wrong = "not the token, but just as long"

    /// Four wrong guesses from four addresses of 127.0.0.0/24 slow down a fifth address of it,
    /// not an address of another network.
    @Test func addressesOfOneNetworkShareOneSlowdown() async throws {
        try await auth.withTokenNode { node, log in
            let port = node.port
            let answers = try await onOwnThread(named: "test-guess") { () throws -> [(answer: String, took: Duration)] in
                try (2...6).map { try Self.plainLogin(from: "127.0.0.\($0)", port: port, token: Self.wrong) }
                    + [Self.plainLogin(from: "127.0.1.2", port: port, token: Self.wrong)]
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
        try await auth.withTokenNode { node, log in
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
                                if try Self.plainLogin(from: source, port: port, token: Self.wrong).answer == "unauthorized" {
                                    answered.increment()
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // 32 past the burst, then at most 8 workers x 2 waits of 2 s (and a drained few).
            #expect(answered.value <= 80, "\(answered.value) wrong guesses answered in 3 s from \(next.value) tries")
            #expect(answered.value >= 20)
            let lines = log.all.filter { $0.contains("failed logins") || $0.contains("[Node] Refused") }
            #expect(lines.count <= 45, "\(lines.count) log lines for \(answered.value) guesses: \(lines.suffix(20))")
            #expect(log.matching("from any networks").count >= 1, "\(lines.suffix(3))")
        }
    }

    /// The right token in plain text, 20 times: one warning (and the rest summed later), not 20;
    /// a wrong one sent in plain text is a failed login, not "the token" sent in plain text.
    @Test func plainTextTokensAreWarnedAboutOncePerBurst() async throws {
        try await auth.withTokenNode { node, log in
            let port = node.port
            let answers = try await onOwnThread(named: "test-plain") { () throws -> [String] in
                try (0..<20).map { _ in try Self.plainLogin(from: "127.0.0.1", port: port, token: AuthHandshakeTests.token).answer }
                    + [Self.plainLogin(from: "127.0.0.1", port: port, token: Self.wrong).answer]
            }
            #expect(answers == Array(repeating: "welcome", count: 20) + ["unauthorized"])
            try await log.waitFor("[Node] Refused 127.0.0.1:")
            #expect(log.matching("sent the token in plain text").count == 1, "\(log.matching("plain text").count) warnings")
        }
    }
}
