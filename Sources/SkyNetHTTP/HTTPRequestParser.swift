import SkyNetRuntime

/// The head of an HTTP/1.x request, as far as the dashboard cares: method, path, headers.
package struct HTTPRequest: Sendable, Equatable {
    package let method: String
    /// The target without its query string (`/events?x=1` → `/events`).
    package let path: String
    /// The query string after `?`, or "" when there is none.
    package let query: String
    package let version: String
    /// Header names lowercased, in the order they came.
    package let headers: [(name: String, value: String)]
    /// The client's address (`host:port`), set by the server; "" when parsed alone.
    package internal(set) var peer = ""

    package static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.version == b.version
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    /// The first header called `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }
}

/// A pure, incremental parser of one request head: feed it bytes as they arrive; it answers
/// when the head is complete or which status refuses it. It knows no socket (tested alone).
///
/// Limits: a request line longer than `maxRequestLineBytes` → 414; header bytes over
/// `maxHeaderBytes` or more than `maxHeaderLines` lines → 431; anything malformed (not
/// `METHOD SP /target SP HTTP/1.x`, a header without a name and colon, a folded line, a NUL)
/// → 400. Lines end in CRLF; a bare LF is tolerated. A body is never read.
package struct HTTPRequestParser: Sendable {
    package enum Outcome: Sendable, Equatable {
        case needMore
        case complete(HTTPRequest)
        case refused(HTTPStatus)
    }

    package let maxRequestLineBytes: Int
    package let maxHeaderBytes: Int
    package let maxHeaderLines: Int

    /// Frames the head; its own bound is the largest of ours, so our limits refuse first.
    private var lines: LineFramer
    /// The bytes of the head taken so far, newlines included.
    private var scanned = 0
    private var requestLine: (method: String, target: String, version: String)?
    private var headers: [(name: String, value: String)] = []
    private var headerBytes = 0
    private var outcome = Outcome.needMore

    package init(maxRequestLineBytes: Int = 8 * 1024, maxHeaderBytes: Int = 16 * 1024, maxHeaderLines: Int = 100) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderLines = maxHeaderLines
        lines = LineFramer(maxLineBytes: max(maxRequestLineBytes, maxHeaderBytes))
    }

    /// Takes the next bytes; once the outcome is final, later bytes are ignored.
    package mutating func feed(_ bytes: some Collection<UInt8>) -> Outcome {
        guard outcome == .needMore else { return outcome }
        for piece in lines.feed(Array(bytes)) where outcome == .needMore {
            switch piece {
            case .line(let line): outcome = take([UInt8](line))
            case .tooLong: outcome = .refused(requestLine == nil ? .uriTooLong : .headerFieldsTooLarge)
            }
        }
        guard outcome == .needMore else { return outcome }
        // No full line yet: refuse as soon as the line in progress is already too long.
        let pending = lines.pendingCount
        if requestLine == nil, pending > maxRequestLineBytes { outcome = .refused(.uriTooLong) }
        if requestLine != nil, headerBytes + pending > maxHeaderBytes { outcome = .refused(.headerFieldsTooLarge) }
        return outcome
    }

    /// Takes one line of the head (its newline stripped).
    private mutating func take(_ bytes: [UInt8]) -> Outcome {
        let lineBytes = bytes.count + 1
        let line = bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes[...]
        scanned += lineBytes
        if requestLine == nil {
            if lineBytes > maxRequestLineBytes { return .refused(.uriTooLong) }
            // RFC 9112 §2.2: a server should ignore empty lines before the request line.
            if line.isEmpty, scanned <= 4 { return .needMore }
            guard let parsed = Self.parseRequestLine(line) else { return .refused(.badRequest) }
            requestLine = parsed
            return .needMore
        }
        headerBytes += lineBytes
        if headerBytes > maxHeaderBytes { return .refused(.headerFieldsTooLarge) }
        if line.isEmpty { return finish() }
        if headers.count == maxHeaderLines { return .refused(.headerFieldsTooLarge) }
        guard let header = Self.parseHeader(line) else { return .refused(.badRequest) }
        headers.append(header)
        return .needMore
    }

    private func finish() -> Outcome {
        guard let requestLine else { return .refused(.badRequest) }
        let target = requestLine.target
        let question = target.firstIndex(of: "?")
        return .complete(HTTPRequest(
            method: requestLine.method,
            path: String(target[..<(question ?? target.endIndex)]),
            query: question.map { String(target[target.index(after: $0)...]) } ?? "",
            version: requestLine.version,
            headers: headers))
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> (method: String, target: String, version: String)? {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else { return nil }
        // Origin form only: no absolute URLs, no `*`, nothing but visible ASCII.
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let versionText = String(decoding: version, as: UTF8.self)
        guard versionText == "HTTP/1.1" || versionText == "HTTP/1.0" else { return nil }
        return (String(decoding: method, as: UTF8.self), String(decoding: target, as: UTF8.self), versionText)
    }

    private static func parseHeader(_ line: ArraySlice<UInt8>) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = line[line.startIndex..<colon]
        // A name is a token: no spaces before the colon, no folded continuation lines.
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return nil }
        let value = line[(colon + 1)...]
        guard !value.contains(0), !value.contains(UInt8(ascii: "\r")) else { return nil }
        let trimmed = value.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        return (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: trimmed, as: UTF8.self))
    }

    /// RFC 9110 `tchar`: the bytes a method or header name may hold.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
