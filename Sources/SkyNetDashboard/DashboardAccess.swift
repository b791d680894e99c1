import SkyNetAuth
import SkyNetHTTP
import SkyNetRuntime
import SkyNetTransport

/// Who may read a dashboard: the Host check that stops DNS rebinding, and, when the cluster
/// has a token, a login that proves the token without sending it.
///
/// Login (docs/PROTOCOL.md, "Dashboard"): `GET /login/challenge` gives a fresh nonce;
/// the page answers `GET /login?nonce=N&proof=P` with P = hex HMAC-SHA256(token,
/// "skynet dashboard proof\n" ‖ N), and a right proof gets a random session cookie
/// (`HttpOnly`, `SameSite=Strict`). Nonces are single-use and live 60 s; at most 4 per
/// address (a fifth pushes out that address's oldest) and 1,024 in all: when all 1,024 are
/// pending, an address that holds none gets 503, so a pending challenge is never pushed out
/// by another address's. 64 sessions are kept (the oldest go first). After a wrong proof no
/// other proof from that address's prefix (/24, /64) is checked for a second (`429`), and at
/// most 10 wrong proofs a second are checked in all, so online guessing runs at 10 guesses
/// a second however many addresses guess (while a flood lasts, the owner's proof may get
/// 429 too: the page says so, and a session already open is not touched).
/// The session id does travel in clear (plain HTTP), so whoever can read the traffic can
/// read the dashboard too, as they can read the scan's own lines: never the token.
package final class DashboardAccess: Sendable {
    struct State {
        var nonces: [(value: String, address: String, expires: ContinuousClock.Instant)] = []
        var sessions: [String] = []
        /// Prefixes that sent a wrong proof, until when they must wait (at most `maxPaused`).
        var pausedUntil: [String: ContinuousClock.Instant] = [:]
        /// Wrong proofs counted in the second that started at `start`, over all addresses.
        var wrongProofs = (start: ContinuousClock.Instant.now, count: 0)
        /// Every wrong proof ever checked (`skynet_login_failures_total`).
        var wrongProofsTotal = 0
    }

    static let proofLabel = "skynet dashboard proof\n"
    static let cookieName = "skynet_session"
    static let maxNonces = 1024
    static let maxNoncesPerAddress = 4
    static let maxSessions = 64
    static let maxPaused = 1024
    /// Wrong proofs checked per second over all addresses: beyond it every proof waits (429).
    static let maxWrongProofsPerSecond = 10
    static let nonceLifetime: Duration = .seconds(60)
    static let wrongProofPause: Duration = .seconds(1)
    /// Paths that show the scan: they need a session when there is a token.
    static let privatePaths: Set<String> = ["/state", "/events"]

    private let key: HMACSHA256?
    /// `Host` values a browser may send to a loopback-bound dashboard; nil: any (bound elsewhere).
    private let allowedHosts: Set<String>?
    private let state = Locked(State())

    /// - Parameters:
    ///   - token: the cluster's token, or nil when there is none (no login then).
    ///   - host, port: where the dashboard listens.
    package init(token: String?, host: String, port: Int) {
        key = token.map { HMACSHA256(key: Array($0.utf8)) }
        allowedHosts = Socket.isLoopback(host)
            ? Set([host, "127.0.0.1", "localhost", "[::1]"].map { "\($0):\(port)" }) : nil
    }

    /// The refusal of a request that may not go on, or nil (see `HTTPServer.Configuration.admit`).
    package func refusal(of request: HTTPRequest) -> HTTPResponse? {
        guard request.header("host") != nil else {
            // HTTP/1.1 requires it; without one the Host check below would have nothing to look at.
            return .error(.badRequest, detail: "no Host header: send Host (127.0.0.1:PORT or localhost:PORT for a local dashboard)")
        }
        if let allowedHosts, let host = request.header("host"), !allowedHosts.contains(host.lowercased()) {
            // A page of another site whose name was pointed at 127.0.0.1 (DNS rebinding).
            return .error(.misdirectedRequest, detail: "this dashboard answers only to 127.0.0.1 or localhost")
        }
        guard key != nil, Self.privatePaths.contains(request.path), !hasSession(request) else { return nil }
        return Self.json(.unauthorized, #"{"error":"log in: this dashboard needs the cluster's token"}"#)
    }

    /// `GET /login/challenge`: a fresh nonce.
    package func challenge(_ request: HTTPRequest) -> HTTPResponse {
        guard key != nil else { return Self.json(.notFound, #"{"error":"this dashboard has no token to log in with"}"#) }
        let nonce = Secrets.hex(Secrets.randomBytes(32))
        let address = Socket.address(of: request.peer)
        let kept = state.withLock { $0.addNonce(nonce, from: address, now: .now) }
        guard kept else {
            var response = Self.json(.serviceUnavailable, #"{"error":"too many logins are under way: try again in a minute"}"#)
            response.extraHeaders.append(("Retry-After", "60"))
            return response
        }
        return Self.json(.ok, #"{"nonce":"\#(nonce)"}"#)
    }

    /// `GET /login?nonce=N&proof=P`: a session cookie for a right proof.
    package func login(_ request: HTTPRequest) -> HTTPResponse {
        guard let key else { return Self.json(.notFound, #"{"error":"this dashboard has no token to log in with"}"#) }
        let fields = Self.queryFields(request.query)
        guard let nonce = fields["nonce"], let proofText = fields["proof"],
              nonce.utf8.count == 64, let proof = Secrets.bytes(fromHex: proofText), proof.count == HMACSHA256.tagCount else {
            return Self.json(.badRequest, #"{"error":"give nonce (from /login/challenge) and proof, 64 hex digits each"}"#)
        }
        enum Verdict { case tooSoon, tooManyEverywhere, unknownNonce, checked(Bool) }
        let prefix = LoginFailures.prefix(of: Socket.address(of: request.peer))  // /24, /64: as a node counts them
        let verdict = state.withLock { state -> Verdict in
            let now = ContinuousClock.now
            if let until = state.pausedUntil[prefix], now < until { return .tooSoon }
            if !state.mayCheckAProof(now: now) { return .tooManyEverywhere }
            guard let index = state.nonces.firstIndex(where: { $0.value == nonce && $0.expires >= now }) else { return .unknownNonce }
            state.nonces.remove(at: index)  // single use, right or wrong
            let right = Secrets.equal(key.tag(Array((Self.proofLabel + nonce).utf8)), proof)
            if !right { state.countWrongProof(from: prefix, now: now) }
            return .checked(right)
        }
        switch verdict {
        case .tooSoon:
            return Self.json(.tooManyRequests, #"{"error":"a wrong token was tried from this network less than a second ago: try again"}"#)
        case .tooManyEverywhere:
            return Self.json(.tooManyRequests, #"{"error":"many wrong tokens were tried in the last second: try again in a second"}"#)
        case .unknownNonce:
            return Self.json(.forbidden, #"{"error":"unknown or expired nonce: ask /login/challenge again"}"#)
        case .checked(false):
            return Self.json(.forbidden, #"{"error":"wrong token"}"#)
        case .checked(true):
            let session = Secrets.hex(Secrets.randomBytes(32))
            state.withLock { state in
                if state.sessions.count >= Self.maxSessions { state.sessions.removeFirst() }
                state.sessions.append(session)
            }
            var response = Self.json(.ok, #"{"ok":true}"#)
            response.extraHeaders.append(("Set-Cookie", "\(Self.cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict"))
            return response
        }
    }

    /// Wrong proofs checked since the dashboard started: never decreases.
    package var loginFailures: Int { state.withLock { $0.wrongProofsTotal } }

    private func hasSession(_ request: HTTPRequest) -> Bool {
        guard let cookies = request.header("cookie") else { return false }
        let offered = cookies.split(separator: ";").compactMap { pair -> String? in
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimming({ $0 == " " }) == Self.cookieName else { return nil }
            return parts[1].trimming { $0 == " " }
        }
        guard !offered.isEmpty else { return false }
        return state.withLock { state in
            offered.contains { candidate in state.sessions.contains { Secrets.equal(Array($0.utf8), Array(candidate.utf8)) } }
        }
    }

    /// `a=1&b=2` as a dictionary (no percent-decoding: our values are hex).
    static func queryFields(_ query: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in query.split(separator: "&").prefix(16) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    static func json(_ status: HTTPStatus, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array((body + "\n").utf8))
    }
}
