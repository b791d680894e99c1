import Foundation
import Testing
@testable import SkyNet

/// Who may read a dashboard: the Host check, and the token login by challenge, both in-process
/// and through a real dashboard on 127.0.0.1:0.
@Suite(.timeLimit(.minutes(2)))
struct DashboardAccessTests {
    static let token = "correct-horse-battery-staple-42"

    // MARK: - Without a token

    @Test func withoutATokenStateAndEventsAreOpenAndLoginIs404() async throws {
        try await withDashboard { dashboard in
            #expect(!dashboard.access.needsLogin)
            #expect(try await HTTPClientForTests.get(dashboard, "/state").status == 200)
            let stream = try await HTTPClientForTests.exchange(dashboard.server, "HEAD /events HTTP/1.1\r\n\r\n")
            #expect(stream == HTTPResponse.eventStreamHead)
            #expect(try await HTTPClientForTests.get(dashboard, "/login/challenge").status == 404)
            let nonce = String(repeating: "ab", count: 32)
            #expect(try await HTTPClientForTests.get(dashboard, "/login?nonce=\(nonce)&proof=\(nonce)").status == 404)
        }
    }

    // MARK: - With a token, through the server

    @Test func withATokenStateAndEventsAre401WithoutASession() async throws {
        try await withDashboard(token: Self.token) { dashboard in
            #expect(dashboard.access.needsLogin)
            for path in ["/state", "/events", "/state?x=1"] {
                #expect(try await HTTPClientForTests.get(dashboard, path).status == 401, "\(path)")
                let forged = try await HTTPClientForTests.get(dashboard, path, headers: ["Cookie: skynet_session=" + String(repeating: "0", count: 64)])
                #expect(forged.status == 401, "\(path)")
            }
            let head = try await HTTPClientForTests.get(dashboard.server, "HEAD /state HTTP/1.1\r\n\r\n")
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
                    dashboard.server, "GET \(path) HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
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
                _ = try socket.send(Array("GET /events HTTP/1.1\r\nCookie: \(cookie)\r\n\r\n".utf8), wait: true)
                return HTTPClientForTests.read(socket, silence: .seconds(20)) { !HTTPEventStreamTests.frames($0).frames.isEmpty }
            }
            responses.append(stream)
            #expect(stream.starts(with: HTTPResponse.eventStreamHead))
            #expect(HTTPEventStreamTests.frames(stream).frames.first?.event == "state")

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
    /// it cannot spend the nonce a user elsewhere is about to answer. And 1,024 in all.
    @Test func noncesAreKeptFourPerAddressAnd1024InAllTheOldestGoingFirst() throws {
        let access = DashboardAccess(token: Self.token, host: "127.0.0.1", port: 8080)
        let user = try nonce(access, from: "127.0.0.1:5000")
        let flood = try (0..<500).map { _ in try nonce(access, from: "10.1.1.1:\(Int.random(in: 1024...65535))") }
        #expect(Set(flood).count == 500)
        #expect(login(access, nonce: flood[495], proof: dashboardProof(token: Self.token, nonce: flood[495]), from: "10.1.1.1:1").status == .forbidden)
        #expect(login(access, nonce: flood[496], proof: dashboardProof(token: Self.token, nonce: flood[496]), from: "10.1.1.1:1").status == .ok)
        #expect(login(access, nonce: user, proof: dashboardProof(token: Self.token, nonce: user), from: "127.0.0.1:5001").status == .ok)
        // Many addresses: the oldest of all goes first past 1,024.
        let spread = try (0..<1025).map { try nonce(access, from: "10.2.\($0 / 256).\($0 % 256):80") }
        #expect(login(access, nonce: spread[0], proof: dashboardProof(token: Self.token, nonce: spread[0])).status == .forbidden)
        #expect(login(access, nonce: spread[1024], proof: dashboardProof(token: Self.token, nonce: spread[1024])).status == .ok)
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
            #expect(try await HTTPClientForTests.get(dashboard.server, "GET /state HTTP/1.0\r\n\r\n").status == 200)
            // The page and the login are behind the same check.
            #expect(try await HTTPClientForTests.get(dashboard, "/", headers: ["Host: evil.example:\(port)"]).status == 421)
        }
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
