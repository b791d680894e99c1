import SkyNetRuntime
import SkyNetTransport

/// One host to log in to, written as GNU parallel's sshlogin: `[N/][user@]host[:port]`
/// (`4/alice@gpu1.lab:2222`, `[2001:db8::1]:2222`, `2001:db8::1`).
///
/// What parallel accepts but SkyNet cannot honour is refused with what to write instead: a
/// password (`user:password@`: BatchMode forbids prompts), host groups (`@group/`), `:` for the
/// local machine, `..`/`-` (read logins from a file or stdin), an ssh command inside a login
/// and parallel's IPv6 port forms (`.80`, `p80`, `#80`).
package struct SSHLogin: Sendable, Equatable, CustomStringConvertible {
    /// A login that cannot be used, saying what is wrong and what to write instead.
    package struct ParseError: Error, CustomStringConvertible, Equatable, Sendable {
        package let description: String
    }

    /// `N/`: at most this many tasks at once on the host; nil: its core count.
    package let slots: Int?
    package let user: String?
    /// A host name, an IPv4 address, or a bare IPv6 address (no brackets: ssh takes it so).
    package let host: String
    package let port: Int?

    package init(slots: Int? = nil, user: String? = nil, host: String, port: Int? = nil) {
        self.slots = slots
        self.user = user
        self.host = host
        self.port = port
    }

    /// The login without `N/` (parallel's "string"): the name of an `--ssh` host.
    package var description: String {
        let user = user.map { $0 + "@" } ?? ""
        guard let port else { return user + host }
        return user + Socket.authority(host: host, port: port)
    }

    /// The most slots a login may name (`ClusterConfig.maxCapacity`).
    static let maxSlots = 1024

    package init(parsing text: String) throws(ParseError) {
        func fail(_ problem: String) -> ParseError { ParseError(description: "ssh login \(Self.shown(text)): \(problem)") }
        if text.isEmpty { throw ParseError(description: "an ssh login is empty: write [N/][user@]host[:port]") }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            throw fail("a login holds no spaces: give ssh's program and options with --ssh-command")
        }
        switch text {
        case ":": throw fail("':' (this machine, to GNU parallel) is not a login: give --local-capacity to run tasks here")
        case "..", "-": throw fail("'\(text)' (read logins from a file, to GNU parallel) is not a login: give --ssh-file FILE")
        default: break
        }
        if text.hasPrefix("@") { throw fail("host groups (@group/) are not supported: list the hosts") }
        var rest = Substring(text)
        slots = try Self.takeSlots(&rest, fail: fail)
        user = try Self.takeUser(&rest, fail: fail)
        (host, port) = try Self.hostAndPort(rest, fail: fail)
    }

    /// `N/` at the start of `rest`, taken off it.
    private static func takeSlots(_ rest: inout Substring, fail: (String) -> ParseError) throws(ParseError) -> Int? {
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, rest.dropFirst(digits.count).first == "/" else {
            if rest.contains("/") { throw fail("'/' belongs only after a number of slots, as in 4/host") }
            return nil
        }
        guard let slots = Int(digits), (1...maxSlots).contains(slots) else {
            throw fail("\(digits) slots is outside 1...\(maxSlots)")
        }
        rest = rest.dropFirst(digits.count + 1)
        if rest.contains("/") { throw fail("'/' belongs only after a number of slots, as in 4/host") }
        return slots
    }

    /// `user@` at the start of `rest` (up to the first `@`), taken off it.
    private static func takeUser(_ rest: inout Substring, fail: (String) -> ParseError) throws(ParseError) -> String? {
        guard let at = rest.firstIndex(of: "@") else { return nil }
        let user = rest[..<at]
        rest = rest[rest.index(after: at)...]
        if user.contains(":") { throw fail("a password in a login (user:password@) is refused: use a key (BatchMode forbids prompts)") }
        if rest.contains("@") { throw fail("more than one '@': write user@host") }
        guard !user.isEmpty else { throw fail("the user before '@' is empty") }
        guard user.first != "-", user.allSatisfy(isNameCharacter) else {
            throw fail("the user \(shown(user)) may hold only letters, digits, '.', '_' and '-', not first")
        }
        return String(user)
    }

    private static func hostAndPort(_ rest: Substring, fail: (String) -> ParseError) throws(ParseError) -> (String, Int?) {
        if rest.isEmpty { throw fail("the host is missing") }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("'[' is never closed: write [ADDRESS]:PORT") }
            let address = rest[rest.index(after: rest.startIndex)..<close]
            try checkIPv6(address, fail: fail)
            let after = rest[rest.index(after: close)...]
            if after.isEmpty { return (String(address), nil) }
            guard after.first == ":" else { throw fail("only ':PORT' may follow ']'") }
            return (String(address), try port(after.dropFirst(), fail: fail))
        }
        if rest.filter({ $0 == ":" }).count >= 2 {
            // A bare IPv6 address has no port (as in GNU parallel: 2001:db8::1:80 is an address).
            try checkIPv6(rest, fail: fail)
            return (String(rest), nil)
        }
        let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let host = parts[0]
        guard !host.isEmpty else { throw fail("the host is missing") }
        if host.hasPrefix("-") { throw fail("a host may not begin with '-' (ssh would read it as an option)") }
        guard host.allSatisfy(isNameCharacter) else {
            throw fail("the host \(shown(host)) may hold only letters, digits, '.', '_' and '-'")
        }
        guard keepsDNSLimits(host) else {
            throw fail("the host \(shown(host)) is no host name: at most 253 characters, in parts of 1 to 63 between dots")
        }
        guard !looksLikeSecret(host) else {
            throw fail("the host \(shown(host)) looks like a key or a token, not a host name (a login is [N/][user@]host[:port])")
        }
        return (String(host), parts.count == 2 ? try port(parts[1], fail: fail) : nil)
    }

    private static func port(_ text: Substring, fail: (String) -> ParseError) throws(ParseError) -> Int {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text), (1...65535).contains(port) else {
            throw fail("the port \(shown(text)) is not a number in 1...65535")
        }
        return port
    }

    /// An IPv6 address: hex groups and colons, perhaps ending in a dotted IPv4 address.
    private static func checkIPv6(_ address: Substring, fail: (String) -> ParseError) throws(ParseError) {
        let lastGroup = address.split(separator: ":", omittingEmptySubsequences: false).last ?? ""
        let dotted = lastGroup.contains(".")
        let head = dotted ? address.dropLast(lastGroup.count) : address
        let isIPv4 = lastGroup.split(separator: ".", omittingEmptySubsequences: false).count == 4
            && lastGroup.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy { $0.isASCII && $0.isNumber } && (Int(part) ?? 256) <= 255
            }
        let fits = address.contains(":") && head.allSatisfy({ $0 == ":" || $0.isHexDigit }) && (!dotted || isIPv4)
        guard fits else {
            throw fail("\(shown(address)) is not an IPv6 address; for a port on one write [ADDRESS]:PORT (not .PORT, pPORT or #PORT)")
        }
    }

    /// A piece of a bad login as an error shows it, quoted: escaped, and one of 16 characters
    /// or more (a token's least) cut to its first 8 with its length (`'3f9a2c71…' (64
    /// characters)`): a file given to --ssh-file by mistake, a token's, must not be echoed.
    static func shown(_ text: some StringProtocol) -> String {
        var escaped = ""
        for scalar in String(text).escapingControlCharacters.unicodeScalars {
            // Invisible ones too (a byte-order mark, a zero-width space).
            let invisible = scalar.properties.generalCategory == .format
            escaped += invisible ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(scalar)
        }
        guard escaped.count >= 16 else { return "'\(escaped)'" }
        return "'\(escaped.prefix(8))…' (\(text.count) characters)"
    }

    /// Whether `host` has a part that reads as a random key rather than a name: 16 characters or
    /// more whose letters and digits (`-` and `_` aside) mix both and are all hex digits
    /// (`openssl rand -hex`, a UUID) or mix both cases (base64, `token_urlsafe`). Such a token
    /// given to --ssh-file by mistake would otherwise go to ssh, and so to DNS, as a host name;
    /// a name people write is lower case, or has words in it.
    static func looksLikeSecret(_ host: Substring) -> Bool {
        host.split(separator: ".").contains { part in
            guard part.count >= 16 else { return false }
            let characters = part.filter { $0 != "-" && $0 != "_" }
            let hasDigit = characters.contains(where: \.isNumber), hasLetter = characters.contains(where: \.isLetter)
            guard hasDigit && hasLetter else { return false }
            return characters.allSatisfy(\.isHexDigit) || characters.contains(where: \.isUppercase) && characters.contains(where: \.isLowercase)
        }
    }

    /// Whether `host` keeps DNS's limits (RFC 1035): at most 253 characters, in parts of 1 to
    /// 63 between dots (one final dot allowed). A token's 64 hex digits are no host name.
    static func keepsDNSLimits(_ host: Substring) -> Bool {
        let name = host.hasSuffix(".") ? host.dropLast() : host
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.count <= 253 && parts.allSatisfy { (1...63).contains($0.count) }
    }

    private static func isNameCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "." || character == "_" || character == "-")
    }
}

extension SSHLogin {
    /// The logins of `--ssh a,b`: split on `,`, empty items skipped.
    package static func list(_ value: String) throws(ParseError) -> [SSHLogin] {
        var logins: [SSHLogin] = []
        for item in value.split(separator: ",") {
            let login = item.trimming(\.isWhitespace)
            if !login.isEmpty { logins.append(try SSHLogin(parsing: login)) }
        }
        return logins
    }

    /// The most bytes an `--ssh-file` may hold.
    static let maxFileSize = 1 << 20

    /// The logins of `--ssh-file`: one a line (commas allowed too); blank lines and lines whose
    /// first non-blank is `#` are skipped, blanks around a login dropped. Errors name `FILE:LINE`.
    package static func file(_ path: String) throws(ParseError) -> [SSHLogin] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = errno == ENOENT ? "does not exist" : "cannot be read: \(String(cString: strerror(errno)))"
            throw ParseError(description: "ssh login file \(path) \(reason)")
        }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: maxFileSize + 1), count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw ParseError(description: "ssh login file \(path) cannot be read: \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            count += got
        }
        if count > maxFileSize { throw ParseError(description: "ssh login file \(path) is larger than 1 MiB") }
        guard let text = String(validating: bytes[..<count], as: UTF8.self) else {
            throw ParseError(description: "ssh login file \(path) is not UTF-8 text")
        }
        return try lines(of: text, file: path)
    }

    /// The logins in the text of an `--ssh-file` named `file`.
    static func lines(of text: String, file: String) throws(ParseError) -> [SSHLogin] {
        var logins: [SSHLogin] = []
        // A byte-order mark, as some editors write first, is not part of the first login.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            // "\r\n" is one Character, so a CRLF file splits as a plain one.
            let trimmed = line.trimming(\.isWhitespace)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do {
                logins += try list(trimmed)
            } catch {
                throw ParseError(description: "\(file):\(index + 1): \(error.description)")
            }
        }
        return logins
    }
}
