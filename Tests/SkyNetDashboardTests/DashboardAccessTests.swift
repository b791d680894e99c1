import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetDashboard
@testable import SkyNetHTTP
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransport
import Testing

/// Who may read a dashboard: the Host check, and the token login by challenge, both in-process
/// and through a real dashboard on 127.0.0.1:0.
@Suite(.timeLimit(.minutes(2)))
struct DashboardAccessTests {
    static let token = "correct-horse-battery-staple-42"

    // MARK: - Without a token

    @Test func withoutATokenStateAndEventsAreOpenAndLoginIs404() async throws {
        try await withDashboard { dashboard in
            #expect(try await HTTPClientForTests.get(dashboard, "/state").status == 200)
            let stream = try await HTTPClientForTests.exchange(dashboard.server, "HEAD /events HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\n\r\n")
            #expect(stream == HTTPResponse.eventStreamHead)
            #expect(try await HTTPClientForTests.get(dashboard, "/login/challenge").status == 404)
            let nonce = String(repeating: "ab", count: 32)
            #expect(try await HTTPClientForTests.get(dashboard, "/login?nonce=\(nonce)&proof=\(nonce)").status == 404)
        }
    }

    // MARK: - With a token, through the server

    @Test func withATokenStateAndEventsAre401WithoutASession() async throws {
        try await withDashboard(token: Self.token) { dashboard in
            for path in ["/state", "/events", "/state?x=1"] {
                #expect(try await HTTPClientForTests.get(dashboard, path).status == 401, "\(path)")
                let forged = try await HTTPClientForTests.get(dashboard, path, headers: ["Cookie: skynet_session=" + String(repeating: "0", count: 64)])
                #expect(forged.status == 401, "\(path)")
            }
            let head = try await HTTPClientForTests.get(dashboard.server, "HEAD /state HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\n\r\n")
            #expect(head.status == 401)
            // The page itself loads: it is what asks for the token.
            #expect(try await HTTPClientForTests.get(dashboard, "/").status == 200)
        }
    }

    /// The whole login through the server; no response byte holds the token.
    @Test func aRightProofGetsAStrictHttpOnlyCookieThatOpensStateAndEvents() async throws {
        try await withDashboard(token: Self.token) { dashboard in
            var responses: [[UInt8]] = []
            func get(_ path: String, headers: [String] = []) async throws -> HTTPClientForTests.Response {
                let bytes = try await HTTPClientForTests.exchange(
                    dashboard.server, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
                responses.append(bytes)
                return try #require(HTTPClientForTests.parse(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            }
            _ = try await get("/")
            _ = try await get("/state")
            let challenge = try await get("/login/challenge")
            #expect(challenge.status == 200 && challenge.headers["content-type"] == "application/json")
            let nonce = try #require(dashboardNonce(challenge.body))
            #expect(nonce.utf8.count == 64 && nonce.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            let login = try await get("/login?nonce=\(nonce)&proof=\(dashboardProof(token: Self.token, nonce: nonce))")
            #expect(login.status == 200)
            let setCookie = try #require(login.headers["set-cookie"])
            let attributes = setCookie.components(separatedBy: "; ")
            #expect(attributes.contains("HttpOnly") && attributes.contains("SameSite=Strict") && attributes.contains("Path=/"), "\(setCookie)")
            let cookie = try #require(attributes.first)
            #expect(cookie.hasPrefix("skynet_session=") && cookie.count > "skynet_session=".count + 32)

            let state = try await get("/state", headers: ["Cookie: other=1; \(cookie)"])
            #expect(state.status == 200)
            #expect(try parse(state.body)["total"] as? Int == 10)

            let port = dashboard.server.port
            let stream = try await onOwnThread(named: "test-dashboard-events") { () throws -> [UInt8] in
                // Connected here, not before a hop through the pool that the head deadline counts.
                let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
                defer { socket.close() }
                _ = try socket.send(Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n\r\n".utf8), wait: true)
                return HTTPClientForTests.read(socket, silence: .seconds(20)) { !EventStreamReader.frames($0).frames.isEmpty }
            }
            responses.append(stream)
            #expect(stream.starts(with: HTTPResponse.eventStreamHead))
            #expect(EventStreamReader.frames(stream).frames.first?.event == "state")

            // The failures, too, say nothing of the token.
            _ = try await get("/login?nonce=\(nonce)&proof=\(dashboardProof(token: Self.token, nonce: nonce))")  // used: 403
            let other = try #require(dashboardNonce(try await get("/login/challenge").body))
            #expect(try await get("/login?nonce=\(other)&proof=\(dashboardProof(token: "wrong-token-of-sixteen", nonce: other))").status == 403)
            #expect(try await get("/login?nonce=\(other)&proof=zz").status == 400)
            let token = Array(Self.token.utf8)
            for response in responses {
                #expect(!contains(response, token))
                #expect(!contains(response, Array(Secrets.hex(token).utf8)))
            }
        }
    }

    // MARK: - The login's rules, in-process

    @Test func aWrongProofIs403AndTheNextProofWithinASecondIs429() async throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let first = try nonce(access), second = try nonce(access)
        #expect(login(access, nonce: first, proof: dashboardProof(token: "not-the-token-at-all", nonce: first)).status == .forbidden)
        let clock = ContinuousClock(), wrong = clock.now
        let right = dashboardProof(token: Self.token, nonce: second)
        #expect(login(access, nonce: second, proof: right).status == .tooManyRequests)
        // The pause ends after a second; the nonce was not spent on a 429.
        var status = HTTPStatus.tooManyRequests
        while status == .tooManyRequests, clock.now - wrong < .seconds(10) {
            try await Task.sleep(for: .milliseconds(50))
            status = login(access, nonce: second, proof: right).status
        }
        #expect(status == .ok)
        #expect(clock.now - wrong >= .milliseconds(900))
    }

    /// The pause after a wrong proof holds back that address only: a guesser elsewhere (or on
    /// another port of the same host: the same address) cannot lock the owner out.
    @Test func theWrongProofsPauseHoldsBackOnlyItsAddress() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let wrong = try nonce(access), sameHost = try nonce(access), owner = try nonce(access)
        #expect(login(access, nonce: wrong, proof: dashboardProof(token: "not-the-token-at-all", nonce: wrong), from: "10.9.8.7:4000").status == .forbidden)
        #expect(login(access, nonce: sameHost, proof: dashboardProof(token: Self.token, nonce: sameHost), from: "10.9.8.7:4001").status == .tooManyRequests)
        #expect(login(access, nonce: owner, proof: dashboardProof(token: Self.token, nonce: owner), from: "127.0.0.1:5000").status == .ok)
    }

    @Test func aNonceWorksOnceAndAnUnknownOneIs403() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let nonce = try nonce(access)
        let proof = dashboardProof(token: Self.token, nonce: nonce)
        #expect(login(access, nonce: nonce, proof: proof).status == .ok)
        #expect(login(access, nonce: nonce, proof: proof).status == .forbidden)
        let unknown = String(repeating: "5a", count: 32)
        #expect(login(access, nonce: unknown, proof: dashboardProof(token: Self.token, nonce: unknown)).status == .forbidden)
        // Neither was a wrong token: a right proof goes through at once.
        let fresh = try self.nonce(access)
        #expect(login(access, nonce: fresh, proof: dashboardProof(token: Self.token, nonce: fresh)).status == .ok)
    }

    @Test(arguments: ["", "nonce=", "proof=", "nonce=abc&proof=def", "NONCE", "&&&",
                      "nonce=\(String(repeating: "a", count: 64))",
                      "nonce=\(String(repeating: "a", count: 63))&proof=\(String(repeating: "b", count: 64))",
                      "nonce=\(String(repeating: "a", count: 64))&proof=\(String(repeating: "b", count: 62))",
                      "nonce=\(String(repeating: "a", count: 64))&proof=\(String(repeating: "zz", count: 32))"])
    func aMalformedLoginQueryIs400(_ query: String) {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        #expect(access.login(dashboardRequest("/login", query: query)).status == .badRequest)
    }

    /// Four outstanding nonces per address: one asking in a loop pushes out only its own, so
    /// it cannot spend the nonce a user elsewhere is about to answer. And 1,024 in all: past
    /// them a new address is refused (503), nobody's nonce is pushed out.
    @Test func noncesAreKeptFourPerAddressAnd1024InAllAndAFullTableRefusesNewAddresses() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let user = try nonce(access, from: "127.0.0.1:5000")
        let flood = try (0..<500).map { _ in try nonce(access, from: "10.1.1.1:\(Int.random(in: 1024...65535))") }
        #expect(Set(flood).count == 500)
        #expect(login(access, nonce: flood[495], proof: dashboardProof(token: Self.token, nonce: flood[495]), from: "10.1.1.1:1").status == .forbidden)
        #expect(login(access, nonce: flood[496], proof: dashboardProof(token: Self.token, nonce: flood[496]), from: "10.1.1.1:1").status == .ok)
        #expect(login(access, nonce: user, proof: dashboardProof(token: Self.token, nonce: user), from: "127.0.0.1:5001").status == .ok)
        // Many addresses: 1,024 in all (three are left from above), then a new address waits.
        let spread = try (0..<1021).map { try nonce(access, from: "10.2.\($0 / 256).\($0 % 256):80") }
        var late = dashboardRequest("/login/challenge")
        late.peer = "10.3.0.1:80"
        let refused = access.challenge(late)
        #expect(refused.status == .serviceUnavailable)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("too many logins"))
        // An address that already has one pushes out its own oldest, even when the table is full.
        let again = try nonce(access, from: "10.2.0.1:81")
        #expect(login(access, nonce: spread[0], proof: dashboardProof(token: Self.token, nonce: spread[0])).status == .ok)
        #expect(login(access, nonce: spread[1], proof: dashboardProof(token: Self.token, nonce: spread[1])).status == .forbidden)
        #expect(login(access, nonce: again, proof: dashboardProof(token: Self.token, nonce: again)).status == .ok)
    }

    /// Four new challenges from one address, then 1,200 from 300 addresses,
    /// do not push out a user's pending one; once 1,024 are pending a new address gets 503.
    @Test func aPendingChallengeIsNotPushedOutByOtherAddresses() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let user = try nonce(access, from: "127.0.0.1:5000")
        var statuses: [Int: Int] = [:]
        for index in 0..<1204 {
            let number = (index - 4) / 4
            var request = dashboardRequest("/login/challenge")
            request.peer = index < 4 ? "10.1.1.1:80" : "10.3.\(number / 256).\(number % 256):80"
            statuses[access.challenge(request).status.rawValue, default: 0] += 1
        }
        // 1,024 pending: the user's, 10.1.1.1's 4 and 1,019; the 255th address's 4th pushes out
        // its own first; the 45 addresses after it are refused.
        #expect(statuses == [200: 1024, 503: 180])
        #expect(login(access, nonce: user, proof: dashboardProof(token: Self.token, nonce: user), from: "127.0.0.1:5001").status == .ok)
    }

    /// A wrong proof holds back its whole prefix (/24, /64) for a second, not only its address.
    @Test func aWrongProofPausesItsWholePrefix() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let nonces = try (0..<6).map { try nonce(access, from: "127.0.0.\($0 + 1):80") }
        let wrong = "not-the-token-at-all"
        #expect(login(access, nonce: nonces[0], proof: dashboardProof(token: wrong, nonce: nonces[0]), from: "10.9.8.7:4000").status == .forbidden)
        #expect(login(access, nonce: nonces[1], proof: dashboardProof(token: Self.token, nonce: nonces[1]), from: "10.9.8.200:4001").status == .tooManyRequests)
        #expect(login(access, nonce: nonces[1], proof: dashboardProof(token: Self.token, nonce: nonces[1]), from: "10.9.9.1:4002").status == .ok)
        #expect(login(access, nonce: nonces[2], proof: dashboardProof(token: wrong, nonce: nonces[2]), from: "2001:db8:1:2::5:4000").status == .forbidden)
        #expect(login(access, nonce: nonces[3], proof: dashboardProof(token: Self.token, nonce: nonces[3]), from: "2001:db8:1:2:ffff::9:4001").status == .tooManyRequests)
        #expect(login(access, nonce: nonces[3], proof: dashboardProof(token: Self.token, nonce: nonces[3]), from: "2001:db8:1:3::5:4000").status == .ok)
    }

    /// 200 wrong proofs from 200 prefixes at once (~57 a second got checked before): a bound
    /// over all addresses checks at most 10 a second; the rest get 429.
    @Test func wrongProofsFromManyPrefixesMeetABoundOverAllAddresses() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let nonces = try (0..<200).map { try nonce(access, from: "10.4.\($0).1:80") }
        let clock = ContinuousClock(), start = clock.now
        var statuses: [Int: Int] = [:]
        for (index, nonce) in nonces.enumerated() {
            let status = login(access, nonce: nonce, proof: dashboardProof(token: "not-the-token-at-all", nonce: nonce), from: "10.5.\(index).1:80").status
            statuses[status.rawValue, default: 0] += 1
        }
        let seconds = Int((clock.now - start).seconds.rounded(.up)) + 1
        #expect((statuses[403] ?? 0) <= 10 * seconds, "\(statuses) in \(clock.now - start)")
        #expect((statuses[403] ?? 0) + (statuses[429] ?? 0) == 200, "\(statuses)")
    }

    @Test func atMost64SessionsAreKeptTheOldestGoingFirst() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        var cookies: [String] = []
        for _ in 0..<65 {
            let nonce = try nonce(access)
            let response = login(access, nonce: nonce, proof: dashboardProof(token: Self.token, nonce: nonce))
            let setCookie = try #require(response.extraHeaders.first { $0.0 == "Set-Cookie" }?.1)
            cookies.append(try #require(setCookie.components(separatedBy: ";").first))
        }
        func status(_ cookie: String) -> HTTPStatus? {
            access.refusal(of: dashboardRequest("/state", headers: [("Host", "127.0.0.1:8080"), ("Cookie", cookie)]))?.status
        }
        #expect(status(cookies[0]) == .unauthorized)
        #expect(status(cookies[1]) == nil)
        #expect(status(cookies[64]) == nil)
    }

    // MARK: - The Host check

    @Test func aLoopbackDashboardAnswersOnlyToLoopbackHostNames() async throws {
        try await withDashboard { dashboard in
            let port = dashboard.port
            for host in ["evil.example:\(port)", "evil.example", "127.0.0.1:\(port + 1)", "127.0.0.1.evil.example:\(port)"] {
                let response = try await HTTPClientForTests.get(dashboard, "/state", headers: ["Host: \(host)"])
                #expect(response.status == 421, "\(host)")
                #expect(!response.text.contains("\"total\""))
            }
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LocalHost:\(port)"] {
                #expect(try await HTTPClientForTests.get(dashboard, "/state", headers: ["Host: \(host)"]).status == 200, "\(host)")
            }
            // The page and the login are behind the same check.
            #expect(try await HTTPClientForTests.get(dashboard, "/", headers: ["Host: evil.example:\(port)"]).status == 421)
        }
    }

    /// A request with no Host is refused (400), over HTTP/1.0 too.
    @Test func aRequestWithoutAHostIsRefused() async throws {
        try await withDashboard { dashboard in
            for request in ["GET /state HTTP/1.1\r\n\r\n", "GET /state HTTP/1.0\r\n\r\n", "GET / HTTP/1.1\r\n\r\n"] {
                let response = try await HTTPClientForTests.get(dashboard.server, request)
                #expect(response.status == 400, "\(request)")
                #expect(response.text.contains("Host"), "\(response.text)")
                #expect(!response.text.contains("\"total\""))
            }
        }
        let open = DashboardAccess(token: nil, host: "0.0.0.0", port: 8080)
        #expect(open.refusal(of: dashboardRequest("/state"))?.status == .badRequest)
    }

    /// The page may not be framed by another site (clickjacking), and a
    /// response that has a policy of its own gets `frame-ancestors` merged into it.
    @Test func everyResponseForbidsFramingAndAnExistingPolicyIsMerged() async throws {
        try await withDashboard { dashboard in
            for path in ["/", "/state", "/nowhere"] {
                let response = try await HTTPClientForTests.get(dashboard, path)
                #expect(response.headers["x-frame-options"] == "DENY", "\(path)")
                #expect(response.headers["content-security-policy"] == "frame-ancestors 'none'", "\(path)")
            }
        }
        let own = HTTPResponse(status: .ok, contentType: "text/plain", body: [], extraHeaders: [("Content-Security-Policy", "default-src 'self'")])
        let lines = String(decoding: own.encoded(includingBody: false), as: UTF8.self).components(separatedBy: "\r\n")
        #expect(lines.filter { $0.lowercased().hasPrefix("content-security-policy:") } == ["Content-Security-Policy: default-src 'self'; frame-ancestors 'none'"])
        #expect(lines.filter { $0.lowercased().hasPrefix("x-frame-options:") } == ["X-Frame-Options: DENY"])
    }

    /// In-process only: tests never bind beyond loopback.
    @Test func aDashboardBoundBeyondLoopbackTakesAnyHostButStillWantsTheToken() {
        #expect(!Socket.isLoopback("0.0.0.0"))
        #expect(Socket.isLoopback("127.0.0.1") && Socket.isLoopback("localhost") && Socket.isLoopback("::1"))
        let open = DashboardAccess(token: nil, host: "0.0.0.0", port: 8080)
        #expect(open.refusal(of: dashboardRequest("/state", headers: [("Host", "scanner.lan:8080")])) == nil)
        let guarded = DashboardAccess(token: Self.token, host: "0.0.0.0", port: 8080)
        #expect(guarded.refusal(of: dashboardRequest("/state", headers: [("Host", "scanner.lan:8080")]))?.status == .unauthorized)
        #expect(guarded.refusal(of: dashboardRequest("/", headers: [("Host", "scanner.lan:8080")])) == nil)
    }

    // MARK: - Helpers

    func nonce(_ access: DashboardAccess, from peer: String = "127.0.0.1:50000") throws -> String {
        var request = dashboardRequest("/login/challenge")
        request.peer = peer
        let response = access.challenge(request)
        #expect(response.status == .ok)
        return try #require(dashboardNonce(response.body))
    }

    func login(_ access: DashboardAccess, nonce: String, proof: String, from peer: String = "127.0.0.1:50000") -> HTTPResponse {
        var request = dashboardRequest("/login", query: "nonce=\(nonce)&proof=\(proof)")
        request.peer = peer
        return access.login(request)
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
