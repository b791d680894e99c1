import Foundation
import Testing
@testable import SkyNet

/// Failed logins by address: a few free, then hellos answered ever later up to a cap, logged
/// rarely, forgotten after a quiet minute (not after a success), never more than 1024 addresses.
@Suite(.onOwnThread) struct LoginFailuresTests {
    let start = ContinuousClock.now

    func failures(free: Int = 3, first: Duration = .milliseconds(250), most: Duration = .seconds(2)) -> LoginFailures {
        var backoff = LoginBackoff()
        backoff.freeFailures = free
        backoff.firstDelay = first
        backoff.maxDelay = most
        return LoginFailures(backoff: backoff)
    }

    /// `count` failures from `address`, a second apart from `start + offset`; their answers.
    func record(_ logins: inout LoginFailures, _ count: Int, from address: String = "10.9.8.7",
                after offset: Duration = .zero) -> [(count: Int, delay: Duration, log: Bool)] {
        (0..<count).map { logins.record(address, now: start + offset + .seconds($0)) }
    }

    @Test func theFirstFailuresAreAnsweredAtOnceAndUnlogged() {
        var logins = failures()
        let answers = record(&logins, 3)
        #expect(answers.map(\.delay) == [.zero, .zero, .zero])
        #expect(answers.map(\.count) == [1, 2, 3])
        #expect(answers.allSatisfy { !$0.log })
    }

    @Test func laterFailuresWaitTwiceAsLongEachUpToTheCap() {
        var logins = failures()
        let delays = record(&logins, 9).map(\.delay)
        #expect(delays == [.zero, .zero, .zero, .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
    }

    /// With a cap far away the doubling itself stays bounded: no overflow, however many failures.
    @Test func theDelayNeverPassesTheCapHoweverManyFailures() {
        var logins = failures(free: 0, first: .milliseconds(1), most: .seconds(3600))
        let delays = (0..<500).map { logins.record("10.9.8.7", now: start + .milliseconds($0)).delay }
        #expect(delays.prefix(4) == [.milliseconds(1), .milliseconds(2), .milliseconds(4), .milliseconds(8)])
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(delays.allSatisfy { $0 <= .seconds(3600) })
        var capped = failures(free: 0)
        #expect(record(&capped, 59).allSatisfy { $0.delay <= .seconds(2) })
    }

    @Test func theFirstSlowedFailureAndPowersOfTwoAreLogged() {
        var logins = failures(free: 5)
        let logged = record(&logins, 59).filter(\.log).map(\.count)
        #expect(logged == [6, 8, 16, 32])
        var withDefaults = failures()
        #expect(record(&withDefaults, 40).filter(\.log).map(\.count) == [4, 8, 16, 32])
        var generous = failures(free: 10)  // 8 is free here: nothing logged before the first slowed one
        #expect(record(&generous, 20).filter(\.log).map(\.count) == [11, 16])
    }

    @Test func aQuietMinuteStartsTheCountAgain() {
        var logins = failures()
        _ = record(&logins, 5)
        let later = logins.record("10.9.8.7", now: start + .seconds(4) + LoginFailures.window)
        #expect(later.count == 1 && later.delay == .zero && !later.log)
        let soon = logins.record("10.9.8.7", now: start + .seconds(5) + LoginFailures.window)
        #expect(soon.count == 2)
    }

    /// Nothing but a quiet minute forgets an address: an attacker may share the address of a
    /// real coordinator, whose logins must not wipe its count.
    @Test func theWaitForAnAddressFollowsItsFailuresUntilAQuietMinute() {
        var logins = failures()
        #expect(logins.delay(for: "10.9.8.7", now: start) == .zero)
        _ = record(&logins, 3)
        #expect(logins.delay(for: "10.9.8.7", now: start + .seconds(3)) == .zero)
        _ = record(&logins, 2, after: .seconds(3))
        #expect(logins.delay(for: "10.9.8.7", now: start + .seconds(5)) == .milliseconds(500))
        #expect(logins.delay(for: "10.9.8.8", now: start + .seconds(5)) == .zero)
        #expect(logins.delay(for: "10.9.8.7", now: start + .seconds(4) + LoginFailures.window) == .zero)
    }

    @Test func addressesAreCountedEachOnItsOwn() {
        var logins = failures()
        _ = record(&logins, 6, from: "10.0.0.1")
        let other = logins.record("10.0.0.2", now: start + .seconds(6))
        #expect(other.count == 1 && other.delay == .zero)
    }

    /// An attacker with many addresses cannot grow the table: at most 1024 are kept, those past
    /// the window go first, then the one that failed longest ago.
    @Test func atMost1024AddressesAreKept() {
        var logins = failures()
        var most = 0
        for index in 0..<5000 {
            _ = logins.record("10.\(index / 256).\(index % 256).1", now: start + .milliseconds(index))
            most = max(most, logins.entries.count)
        }
        #expect(most == LoginFailures.maxAddresses && logins.entries.count == 1024)
        #expect(logins.entries["10.19.135.1"] != nil, "the newest address was dropped")  // index 4999
        #expect(logins.entries["10.0.0.1"] == nil, "the oldest address was kept")
        // A busy address that keeps failing stays counted while newer ones come and go.
        var busy = failures()
        for index in 0..<3000 {
            let now = start + .milliseconds(index)
            if index % 100 == 0 { _ = busy.record("10.200.0.1", now: now) }
            _ = busy.record("10.\(index / 256).\(index % 256).2", now: now)
        }
        #expect(busy.entries["10.200.0.1"]?.count == 30)
    }

    @Test func entriesPastTheWindowMakeRoomFirst() {
        var logins = failures()
        for index in 0..<1024 { _ = logins.record("old-\(index)", now: start) }
        _ = logins.record("recent", now: start + .seconds(30))
        #expect(logins.entries.count == 1024)  // one old entry dropped for it
        _ = logins.record("new", now: start + .seconds(61))  // every old one is past the window now
        #expect(logins.entries.count == 2)
        #expect(logins.entries["recent"] != nil && logins.entries["new"] != nil)
    }
}

/// The slowdown on a node in this process: wrong proofs from 127.0.0.1 over real connections.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct NodeLoginSlowdownTests {
    let auth = AuthHandshakeTests()

    /// How long a login with `token` takes to be refused (or accepted).
    func timedLogin(_ node: Node, token: String) async throws -> (Duration, Result<PeerConnection, any Error>) {
        let clock = ContinuousClock(), start = clock.now
        let result: Result<PeerConnection, any Error>
        do {
            result = .success(try await auth.nodeTests.connect(node, token: token))
        } catch {
            result = .failure(error)
        }
        return (clock.now - start, result)
    }

    func wrongLogin(_ node: Node) async throws -> Duration {
        let (took, result) = try await timedLogin(node, token: "not the token, but just as long")
        guard case .failure(let error as WireError) = result, error.code == "unauthorized" else {
            throw CheckFailed(description: "a wrong proof was not refused unauthorized: \(result)")
        }
        return took
    }

    /// After 3 free failures and a 4th (logged), every hello from the address waits before it
    /// is answered, right or wrong (250 ms, 500 ms, 1 s, 2 s), and a right login does not clear it.
    @Test func afterFourWrongProofsEveryHelloWaitsAndARightLoginDoesNotClearIt() async throws {
        try await auth.withTokenNode { node, log in  // the defaults: 3 free, then 250 ms doubling
            for _ in 0..<4 { _ = try await wrongLogin(node) }
            let lines = try await log.waitFor("[Node] 4 failed logins from 127.0.0.1 within 60 s: its hellos are now answered after 0.25 s")
            #expect(lines.count == 1 && log.matching("failed logins").count == 1, "\(log.matching("failed logins"))")
            let fifth = try await wrongLogin(node), sixth = try await wrongLogin(node)
            #expect(fifth >= .milliseconds(200), "the 5th refusal came after \(fifth)")
            #expect(sixth >= .milliseconds(400), "the 6th refusal came after \(sixth)")
            // Closing early tells nothing: the right token waits as long (1 s after 6 failures).
            let (took, result) = try await timedLogin(node, token: AuthHandshakeTests.token)
            try result.get().close()
            #expect(took >= .milliseconds(800), "a right login took \(took)")
            let next = try await wrongLogin(node)
            #expect(next >= .milliseconds(800), "after a right login, a wrong one came after \(next)")
            // The slowed refusals are not logged one by one.
            #expect(log.matching("[Node] Refused").count == 4, "\(log.matching("[Node] Refused"))")
        }
    }

    /// A slowed address's hello waits on the connection's own reader: what the client sent
    /// after it (here pings in the same write) is kept in order and answered after the welcome,
    /// never before it and never dropped; a client that leaves during the wait is not refused
    /// as "busy" (the wait used to end in a refusal on a connection already forgotten).
    @Test func linesSentBehindAHeldHelloAreAnsweredAfterTheWelcomeInOrder() async throws {
        var backoff = LoginBackoff()
        backoff.freeFailures = 0  // every hello after the first failure waits (250 ms)
        try await auth.withTokenNode(backoff: backoff) { node, log in
            _ = try await wrongLogin(node)
            let types = try await onOwnThread(named: "test-held") { () throws -> [String] in
                var client = try RawLines(port: node.port)
                defer { client.close() }
                var burst = #"{"type":"hello","version":1,"name":"old","token":"\#(AuthHandshakeTests.token)"}"# + "\n"
                for id in 1...50 { burst += #"{"type":"ping","id":\#(id)}"# + "\n" }
                try client.send(bytes: Array(burst.utf8))
                return (0..<51).map { _ in client.readLine().flatMap { jsonFields($0)?["type"] as? String } ?? "nothing" }
            }
            #expect(types == ["welcome"] + Array(repeating: "pong", count: 50), "\(types)")

            // Leaves during the wait: no refusal, and no connection left behind.
            try await onOwnThread(named: "test-leave") { () throws in
                let client = try RawLines(port: node.port)
                try client.send(#"{"type":"hello","version":1,"name":"leaver","token":"\#(AuthHandshakeTests.token)"}"#)
                client.close()
            }
            try await awaitState { node.connectionCount == 0 }
            #expect(log.matching("[Node] Refused").count == 1, "\(log.matching("[Node] Refused"))")  // the wrong login only
            #expect(log.matching("busy").isEmpty, "\(log.all)")
        }
    }
}
