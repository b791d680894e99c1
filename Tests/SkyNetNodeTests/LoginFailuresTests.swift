import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire
import Testing

/// Failed logins by network prefix and node-wide: a few free, then hellos answered ever later up
/// to a cap, logged per burst, forgotten after a quiet minute (not after a success), never more
/// than 1024 prefixes.
@Suite(.onOwnThread) struct LoginFailuresTests {
    let start = ContinuousClock.now

    func failures(free: Int = 3, first: Duration = .milliseconds(250), most: Duration = .seconds(2)) -> LoginFailures {
        var backoff = LoginBackoff()
        backoff.freeFailures = free
        backoff.delays = Backoff(first: first, most: most)
        return LoginFailures(backoff: backoff)
    }

    /// `count` failures from `address`, a second apart from `start + offset`; their answers.
    func record(_ logins: inout LoginFailures, _ count: Int, from address: String = "10.9.8.7",
                after offset: Duration = .zero) -> [LoginFailures.Verdict] {
        (0..<count).map { logins.record(address, now: start + offset + .seconds($0)) }
    }

    @Test func theFirstFailuresAreAnsweredAtOnceAndUnlogged() {
        var logins = failures()
        let answers = record(&logins, 3)
        #expect(answers.map(\.delay) == [.zero, .zero, .zero])
        #expect(answers.map(\.count) == [1, 2, 3])
        #expect(answers.allSatisfy { $0.lines.isEmpty && $0.logRefusal })
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

    /// The first slowed failure is said at once; the later ones are summed, a line at most
    /// every 10 s, and a slowed refusal is not logged on its own.
    @Test func theFirstSlowedFailureIsSaidAndTheRestSummedEveryTenSeconds() {
        var logins = failures(free: 5)
        let verdicts = record(&logins, 59)  // a second apart
        let logged = verdicts.enumerated().filter { !$0.element.lines.isEmpty }
        #expect(logged.map(\.offset) == [5, 15, 25, 35, 45, 55])
        #expect(logged.first?.element.lines == ["[Node] 6 failed logins from 10.9.8.0/24 within 60 s: its hellos are now answered after 0.25 s"])
        #expect(logged.dropFirst().allSatisfy { $0.element.lines == ["[Node] 10 more failed logins from 10.9.8.0/24 in the last 10 s"] },
                "\(logged.map(\.element.lines))")
        #expect(verdicts.map(\.logRefusal) == Array(repeating: true, count: 6) + Array(repeating: false, count: 53))
        // The rest of a burst is said by the sweeper once the interval has passed.
        _ = logins.record("10.9.8.7", now: start + .seconds(59))
        #expect(logins.flush(now: start + .seconds(60)).isEmpty)
        #expect(logins.flush(now: start + .seconds(66)) == ["[Node] 4 more failed logins from 10.9.8.0/24 in the last 11 s"])
        #expect(logins.flush(now: start + .seconds(80)).isEmpty)
    }

    @Test func aQuietMinuteStartsTheCountAgain() {
        var logins = failures()
        _ = record(&logins, 5)
        let later = logins.record("10.9.8.7", now: start + .seconds(4) + LoginFailures.window)
        #expect(later.count == 1 && later.delay == .zero && later.lines.isEmpty)
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
        #expect(logins.delay(for: "10.9.9.8", now: start + .seconds(5)) == .zero)
        #expect(logins.delay(for: "10.9.8.7", now: start + .seconds(4) + LoginFailures.window) == .zero)
    }

    @Test func networksAreCountedEachOnItsOwn() {
        var logins = failures()
        _ = record(&logins, 6, from: "10.0.0.1")
        let other = logins.record("10.0.1.1", now: start + .seconds(6))
        #expect(other.count == 1 && other.delay == .zero)
    }

    /// An attacker with many addresses of one network gets no more free guesses than one address.
    @Test func addressesOfOneSlash24ShareOneCountAndOneDelay() {
        var logins = failures()
        let verdicts = (1...8).map { logins.record("10.1.2.\($0)", now: start + .seconds($0)) }
        #expect(verdicts.map(\.count) == Array(1...8))
        #expect(verdicts.map(\.delay).prefix(5) == [.zero, .zero, .zero, .milliseconds(250), .milliseconds(500)])
        #expect(logins.delay(for: "10.1.2.200", now: start + .seconds(9)) == .seconds(2))
        #expect(logins.delay(for: "10.1.3.1", now: start + .seconds(9)) == .zero)
        #expect(logins.entries.count == 1)
    }

    @Test func prefixesAreSlash24ForIPv4AndSlash64ForIPv6() {
        #expect(LoginFailures.prefix(of: "192.168.7.201") == "192.168.7.0/24")
        #expect(LoginFailures.prefix(of: "::ffff:192.168.7.9") == "192.168.7.0/24")
        #expect(LoginFailures.prefix(of: "2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(LoginFailures.prefix(of: "2001:db8:1:2:ffff:ee:dd:cc") == "2001:db8:1:2::/64")
        #expect(LoginFailures.prefix(of: "[2001:db8:1:3::1]") == "2001:db8:1:3::/64")
        #expect(LoginFailures.prefix(of: "fe80::1%eth0") == "fe80:0:0:0::/64")
        #expect(LoginFailures.prefix(of: "::1") == "0:0:0:0::/64")
        #expect(LoginFailures.prefix(of: "not an address") == "not an address")
    }

    /// 2,000 failures from 2,000 networks in 2 s: past the burst every hello, from any network,
    /// waits the cap, so none is free; a quiet spell lifts it; the log holds two lines.
    @Test func aNodeWideBoundHoldsOverManyNetworks() {
        var logins = failures()
        var verdicts: [LoginFailures.Verdict] = []
        var lines: [String] = []
        for index in 0..<2000 {
            let now = start + .milliseconds(index)
            verdicts.append(logins.record("10.\(index / 256).\(index % 256).1", now: now))
            if index % 1000 == 999 { lines += logins.flush(now: now) }
        }
        lines += verdicts.flatMap(\.lines)
        let free = verdicts.filter { $0.delay == .zero }.count
        #expect(free <= 33, "\(free) failures were free")
        #expect(verdicts.suffix(1900).allSatisfy { $0.delay == .seconds(2) && !$0.logRefusal })
        #expect(logins.delay(for: "172.16.0.1", now: start + .seconds(5)) == .seconds(2))
        #expect(logins.entries.count <= LoginFailures.maxPrefixes)
        // Per burst, not per failure: the start of the node-wide hold, then sums.
        #expect(lines.count <= 3, "\(lines)")
        #expect(lines.first == "[Node] Over 32 failed logins, faster than 8 a second from any networks: every hello is now answered after 2 s")
        // The bucket drains at 8 a second: 2,000 failures take about 4 minutes to forget.
        #expect(logins.delay(for: "172.16.0.1", now: start + .seconds(2 + 250)) == .zero)
        #expect(logins.flush(now: start + .seconds(20)).count <= 1)
    }

    /// Below the node-wide rate, a network's own count decides.
    @Test func aSlowTrickleFromManyNetworksStaysUnderTheNodeWideBound() {
        var logins = failures()
        let verdicts = (0..<200).map { logins.record("10.0.\($0).1", now: start + .milliseconds(200 * $0)) }  // 5 a second
        #expect(verdicts.allSatisfy { $0.delay == .zero })
        #expect(!logins.isOverNodeWideBound(now: start + .seconds(40)))
    }

    /// An attacker with many networks cannot grow the table: at most 1024 are kept, those past
    /// the window go first, then the eighth that failed longest ago.
    @Test func atMost1024PrefixesAreKept() {
        var logins = failures()
        var most = 0
        for index in 0..<5000 {
            _ = logins.record("10.\(index / 256).\(index % 256).1", now: start + .milliseconds(index))
            most = max(most, logins.entries.count)
        }
        #expect(most == LoginFailures.maxPrefixes && logins.entries.count > 1024 - 128)
        #expect(logins.entries["10.19.135.0/24"] != nil, "the newest network was dropped")  // index 4999
        #expect(logins.entries["10.0.0.0/24"] == nil, "the oldest network was kept")
        // A busy address that keeps failing stays counted while newer ones come and go.
        var busy = failures()
        for index in 0..<3000 {
            let now = start + .milliseconds(index)
            if index % 100 == 0 { _ = busy.record("10.200.0.1", now: now) }
            _ = busy.record("10.\(index / 256).\(index % 256).2", now: now)
        }
        #expect(busy.entries["10.200.0.0/24"]?.count == 30)
    }

    @Test func entriesPastTheWindowMakeRoomFirst() {
        var logins = failures()
        for index in 0..<1024 { _ = logins.record("old-\(index)", now: start) }
        _ = logins.record("recent", now: start + .seconds(30))
        #expect(logins.entries.count == 1024 - 128 + 1)  // none past the window: the oldest eighth dropped
        for index in 0..<127 { _ = logins.record("more-\(index)", now: start + .seconds(30)) }  // full again
        _ = logins.record("new", now: start + .seconds(61))  // every old one is past the window now
        #expect(logins.entries.count == 1 + 127 + 1)
        #expect(logins.entries["recent"] != nil && logins.entries["new"] != nil)
    }
}

/// The slowdown on a node in this process: wrong tokens from 127.0.0.1 over real connections
/// (each a version 2 hello whose handshake does not open).
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
            throw CheckFailed(description: "a wrong token was not refused unauthorized: \(result)")
        }
        return took
    }

    /// After 3 free failures and a 4th (logged), every hello from the address waits before it
    /// is answered, right or wrong (250 ms, 500 ms, 1 s, 2 s), and a right login does not clear it.
    @Test func afterFourWrongTokensEveryHelloWaitsAndARightLoginDoesNotClearIt() async throws {
        try await auth.withTokenNode { node, log in  // the defaults: 3 free, then 250 ms doubling
            for _ in 0..<4 { _ = try await wrongLogin(node) }
            let lines = try await log.waitFor("[Node] 4 failed logins from 127.0.0.0/24 within 60 s: its hellos are now answered after 0.25 s")
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

    /// The node's own wait is not the client's lateness: a hello it holds back longer than is
    /// left of the hello bound is still answered, since the bound is extended by the wait.
    @Test func aHelloHeldPastTheHelloBoundIsStillAnswered() async throws {
        var backoff = LoginBackoff()
        backoff.freeFailures = 0
        backoff.delays = Backoff(first: .seconds(3), most: .seconds(3))  // real time, on the reader
        let clock = ManualClock(), start = clock.now  // the hello bound's sweeps: 3 s, every 0.75 s
        try await auth.withTokenNode(backoff: backoff, clock: clock, helloTimeout: .seconds(3)) { node, log in
            _ = try await wrongLogin(node)  // the first failure is answered at once
            async let login = timedLogin(node, token: AuthHandshakeTests.token)
            // The held one: the refused connection may still be in its handshake while it closes.
            try await awaitState(upTo: .seconds(60)) {
                node.admission.withLock { $0.pending.values.contains { $0.stage == .handshake && $0.held > .zero } }
            }
            for sweep in 1...5 {  // to 3.75 s: past the bound, within bound + wait
                await clock.waitUntilPending(at: start + .milliseconds(750 * sweep))
                clock.advance(by: .milliseconds(750))
            }
            let (took, result) = try await login
            try result.get().close()
            #expect(took >= .milliseconds(2500), "the right login took \(took)")
            #expect(log.matching("had not finished their hello").isEmpty, "\(log.matching("had not finished"))")
        }
    }

    /// A version 2 hello from `name` carrying the handshake's first message made with `token`.
    static func helloLine(token: String = AuthHandshakeTests.token, name: String) throws -> String {
        var initiator = LinkKey(token: Array(token.utf8)).initiator()
        let first = try initiator.writeMessage(payload: Array(#"{"type":"hello","version":2,"name":"\#(name)"}"#.utf8))
        return #"{"type":"hello","version":2,"noise":"\#(first.base64)"}"#
    }

    /// A slowed address's hello waits on the connection's own reader, right token or wrong:
    /// what the client sent behind it stays unread until the handshake is answered, and is then
    /// read as frames, never as lines: plain-text pings in the same write as the hello end the
    /// link unanswered, however long they waited. A client that waits for the answer is served
    /// after the wait, every frame it then sends at once answered in order; a client that leaves
    /// during the wait is not refused as "busy" (the end of the wait finds the connection gone
    /// and sends nothing).
    @Test func whatCameBehindAHeldHelloIsReadAsFramesOnceTheHandshakeIsAnswered() async throws {
        var backoff = LoginBackoff()
        backoff.freeFailures = 0  // every hello after the first failure waits (250 ms)
        try await auth.withTokenNode(backoff: backoff) { node, log in
            _ = try await wrongLogin(node)
            let (lines, closed, took) = try await onOwnThread(named: "test-held") { () throws -> ([String], Bool, Duration) in
                let clock = ContinuousClock(), start = clock.now
                var client = try RawLines(port: node.port)
                defer { client.close() }
                var burst = try Self.helloLine(name: "held") + "\n"
                for id in 1...50 { burst += #"{"type":"ping","id":\#(id)}"# + "\n" }
                try client.send(bytes: Array(burst.utf8))
                let answer = client.readLine()
                let took = clock.now - start
                return ([answer].compactMap { $0 } + client.readToEnd(), client.closed, took)
            }
            #expect(lines.compactMap { jsonFields($0)?["type"] as? String } == ["handshake"], "\(lines)")
            #expect(lines.count == 1, "a plain line behind the hello was answered: \(lines)")
            #expect(closed, "the node kept a link whose first frame was plain text")
            #expect(took >= .milliseconds(200), "the held hello was answered after \(took)")
            let ended = try await log.waitFor("[Node] Disconnected: held from 127.0.0.1:")
            #expect(ended.allSatisfy { $0.contains("a frame of") }, "\(ended)")

            let ids = try await onOwnThread(named: "test-held") { () throws -> [Int] in
                var client = try EncryptedClient(port: node.port, token: AuthHandshakeTests.token, name: "waited")
                defer { client.close() }
                var burst: [UInt8] = []
                for id in 1...50 { burst += client.frame(#"{"type":"ping","id":\#(id)}"#) }
                try client.sendRaw(burst)
                return try (1...50).map { _ in try client.read().flatMap { jsonFields($0)?["id"] as? Int } ?? -1 }
            }
            #expect(ids == Array(1...50), "\(ids)")

            // Leaves during the wait: no refusal, and no connection left behind.
            try await onOwnThread(named: "test-leave") { () throws in
                let client = try RawLines(port: node.port)
                try client.send(Self.helloLine(name: "leaver"))
                client.close()
            }
            try await awaitState { node.connectionCount == 0 }
            #expect(log.matching("[Node] Refused").count == 1, "\(log.matching("[Node] Refused"))")  // the wrong login only
            #expect(log.matching("busy").isEmpty, "\(log.all)")
        }
    }
}
