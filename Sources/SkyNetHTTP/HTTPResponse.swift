/// The statuses the dashboard's server answers with.
package enum HTTPStatus: Int, Sendable, Equatable {
    case ok = 200
    case badRequest = 400
    case unauthorized = 401
    case forbidden = 403
    case notFound = 404
    case methodNotAllowed = 405
    case requestTimeout = 408
    case uriTooLong = 414
    case misdirectedRequest = 421
    case tooManyRequests = 429
    case headerFieldsTooLarge = 431
    case serviceUnavailable = 503

    package var reason: String {
        switch self {
        case .ok: "OK"
        case .badRequest: "Bad Request"
        case .unauthorized: "Unauthorized"
        case .forbidden: "Forbidden"
        case .notFound: "Not Found"
        case .methodNotAllowed: "Method Not Allowed"
        case .requestTimeout: "Request Timeout"
        case .uriTooLong: "URI Too Long"
        case .misdirectedRequest: "Misdirected Request"
        case .tooManyRequests: "Too Many Requests"
        case .headerFieldsTooLarge: "Request Header Fields Too Large"
        case .serviceUnavailable: "Service Unavailable"
        }
    }
}

/// A complete response, encoded to bytes. Every response carries Content-Type,
/// `Cache-Control: no-store`, `X-Content-Type-Options: nosniff`, and `X-Frame-Options: DENY`
/// with `Content-Security-Policy: frame-ancestors 'none'` (no other site may frame the page:
/// clickjacking); a plain one also Content-Length and `Connection: close` (one request per
/// connection keeps the server simple).
package struct HTTPResponse: Sendable {
    package var status: HTTPStatus
    package var contentType: String
    package var body: [UInt8]
    /// Headers besides the common ones (e.g. `Set-Cookie`); names and values must not hold
    /// CR or LF (they come from our code, never from a request).
    package var extraHeaders: [(String, String)] = []

    package init(status: HTTPStatus, contentType: String, body: [UInt8], extraHeaders: [(String, String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.extraHeaders = extraHeaders
    }

    /// A short text/plain answer for an error status (`detail` on a second line).
    package static func error(_ status: HTTPStatus, detail: String? = nil) -> HTTPResponse {
        var response = HTTPResponse(status: status, contentType: "text/plain; charset=utf-8",
                                    body: Array("\(status.rawValue) \(status.reason)\n\(detail.map { $0 + "\n" } ?? "")".utf8))
        if status == .methodNotAllowed { response.extraHeaders.append(("Allow", "GET, HEAD")) }
        return response
    }

    /// The bytes to send; for HEAD the same head without the body.
    func encoded(includingBody: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status.rawValue) \(status.reason)\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        head += Self.commonHeaders
        // One policy header: a response's own policy gets `frame-ancestors` added to it.
        var policies: [String] = []
        for (name, value) in extraHeaders {
            if name.lowercased() == "content-security-policy" { policies.append(value) } else { head += "\(name): \(value)\r\n" }
        }
        head += "Content-Security-Policy: \((policies + [Self.framePolicy]).joined(separator: "; "))\r\n"
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (includingBody ? body : [])
    }

    /// The head of an event stream: no length (it ends when the connection does).
    static let eventStreamHead: [UInt8] = Array((
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + commonHeaders
            + "Content-Security-Policy: \(framePolicy)\r\nConnection: keep-alive\r\n\r\n"
    ).utf8)

    static let commonHeaders = "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
    static let framePolicy = "frame-ancestors 'none'"
}
