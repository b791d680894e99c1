import Foundation
@testable import SkyNetCluster
@testable import SkyNetSSH
import Testing

struct SSHLoginTests {
    func login(_ text: String) throws -> SSHLogin { try SSHLogin(parsing: text) }

    func problem(_ text: String) -> String? {
        do {
            _ = try SSHLogin(parsing: text)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [
        ("gpu1", SSHLogin(host: "gpu1")),
        ("4/alice@gpu1.lab:2222", SSHLogin(slots: 4, user: "alice", host: "gpu1.lab", port: 2222)),
        ("root@127.0.0.1:22", SSHLogin(user: "root", host: "127.0.0.1", port: 22)),
        ("1024/h", SSHLogin(slots: 1024, host: "h")),
        ("2001:db8::1", SSHLogin(host: "2001:db8::1")),
        // As in GNU parallel: a bare IPv6 address has no port.
        ("2001:db8::1:80", SSHLogin(host: "2001:db8::1:80")),
        ("::ffff:10.0.0.1", SSHLogin(host: "::ffff:10.0.0.1")),
        ("[::1]:2222", SSHLogin(host: "::1", port: 2222)),
        ("2/bob@[fe80::1]", SSHLogin(slots: 2, user: "bob", host: "fe80::1")),
    ])
    func parallelsLoginsAreRead(text: String, expected: SSHLogin) throws {
        #expect(try login(text) == expected)
    }

    @Test(arguments: [
        ("4/alice@gpu1.lab:2222", "alice@gpu1.lab:2222"),
        ("gpu1", "gpu1"),
        ("[::1]:2222", "[::1]:2222"),
        ("::1", "::1"),
    ])
    func theDescriptionIsTheLoginWithoutSlots(text: String, description: String) throws {
        #expect(try login(text).description == description)
        #expect(try login(description) == SSHLogin(user: login(text).user, host: login(text).host, port: login(text).port))
    }

    @Test(arguments: [
        ("alice:secret@gpu1", "a password in a login (user:password@) is refused: use a key (BatchMode forbids prompts)"),
        ("@gpus/gpu1", "host groups (@group/) are not supported: list the hosts"),
        (":", "':' (this machine, to GNU parallel) is not a login: give --local-capacity to run tasks here"),
        ("..", "'..' (read logins from a file, to GNU parallel) is not a login: give --ssh-file FILE"),
        ("-", "'-' (read logins from a file, to GNU parallel) is not a login: give --ssh-file FILE"),
        ("ssh -p 2222 gpu1", "a login holds no spaces: give ssh's program and options with --ssh-command"),
        ("2001:db8::1.80", "'2001:db8::1.80' is not an IPv6 address; for a port on one write [ADDRESS]:PORT (not .PORT, pPORT or #PORT)"),
        ("2001:db8::1p80", "'2001:db8::1p80' is not an IPv6 address; for a port on one write [ADDRESS]:PORT (not .PORT, pPORT or #PORT)"),
        ("2001:db8::1#80", "'2001:db8::1#80' is not an IPv6 address; for a port on one write [ADDRESS]:PORT (not .PORT, pPORT or #PORT)"),
        ("0/gpu1", "0 slots is outside 1...1024"),
        ("1025/gpu1", "1025 slots is outside 1...1024"),
        ("gpu1:0", "the port '0' is not a number in 1...65535"),
        ("gpu1:65536", "the port '65536' is not a number in 1...65535"),
        ("gpu1:", "the port '' is not a number in 1...65535"),
        ("-oProxyCommand=x", "a host may not begin with '-' (ssh would read it as an option)"),
        ("-l@gpu1", "the user '-l' may hold only letters, digits, '.', '_' and '-', not first"),
        ("a/gpu1", "'/' belongs only after a number of slots, as in 4/host"),
        ("gpu$1", "the host 'gpu$1' may hold only letters, digits, '.', '_' and '-'"),
        ("[::1", "'[' is never closed: write [ADDRESS]:PORT"),
        ("[::1]x", "only ':PORT' may follow ']'"),
        ("alice@", "the host is missing"),
        ("a@b@c", "more than one '@': write user@host"),
    ])
    func whatCannotBeHonouredIsRefusedWithWhatToWrite(text: String, message: String) {
        #expect(problem(text) == "ssh login \(SSHLogin.shown(text)): \(message)")
    }

    @Test func aListSkipsEmptyItems() throws {
        #expect(try SSHLogin.list("a,,4/b:2 ,") == [SSHLogin(host: "a"), SSHLogin(slots: 4, host: "b", port: 2)])
        #expect(try SSHLogin.list("") == [])
    }

    @Test func aFileSkipsCommentsAndBlankLinesAndNamesTheLineOfAFault() throws {
        let text = "# hosts\n\n  gpu1  \r\n   # indented comment\n4/b,c\nbad login\n"
        #expect(throws: SSHLogin.ParseError(description: "hosts.txt:6: ssh login 'bad login': a login holds no spaces: give ssh's program and options with --ssh-command")) {
            try SSHLogin.lines(of: text, file: "hosts.txt")
        }
        #expect(try SSHLogin.lines(of: text.replacingOccurrences(of: "bad login\n", with: ""), file: "h") ==
                [SSHLogin(host: "gpu1"), SSHLogin(slots: 4, host: "b"), SSHLogin(host: "c")])
    }

    /// A byte-order mark before the first login is dropped (it made `'\u{FEFF}root'` a bad user
    /// whose mark no one could see); any other invisible character is shown escaped.
    @Test func aByteOrderMarkIsDroppedAndInvisibleCharactersAreShown() throws {
        #expect(try SSHLogin.lines(of: "\u{FEFF}root@gpu1\n", file: "h") == [SSHLogin(user: "root", host: "gpu1")])
        #expect(throws: SSHLogin.ParseError(description:
            #"ssh login 'gp\u{200B}u1': the host 'gp\u{200B}u1' may hold only letters, digits, '.', '_' and '-'"#)) {
            try SSHLogin(parsing: "gp\u{200B}u1")
        }
    }

    /// A file given to --ssh-file by mistake (a token's, an environment) is not echoed whole:
    /// a bad login of 16 characters or more (a token's length) is shown by its first 8.
    @Test func aLongBadLoginIsShownCut() throws {
        let long = String(repeating: "k", count: 64) + "=secret"
        #expect(throws: SSHLogin.ParseError(description: "ssh login 'kkkkkkkk…' (71 characters): the host 'kkkkkkkk…' (71 characters) "
                + "may hold only letters, digits, '.', '_' and '-'")) {
            try SSHLogin(parsing: long)
        }
    }

    /// A token file given to --ssh-file (`openssl rand -hex 32`, or base64) is refused before
    /// any ssh starts, and no error shows more than 8 of its characters: 64 hex digits are no
    /// host name (a DNS name's parts are at most 63 characters), so no ssh looks them up.
    @Test(arguments: [
        "3f9a2c71d04be8855e6f1a9c0b7d3e21f4a8c6d2e9b1705c3a6f8e2d4b9c1a07",  // openssl rand -hex 32
        "q1W2e3R4t5Y6u7I8o9P0a1S2d3F4g5H6j7K8l9Z0x1c=",
        "Zk3/9xQe+Lr0TmB7yWc2sNd8HvKp4aUj1oGf6EiR5bA=",  // openssl rand -base64 32
        "b9468e20c4d1f7a3e5b2c8d9f0a1e6b7",  // openssl rand -hex 16
        "7d2f9a1c4e8b3065",  // openssl rand -hex 8: the shortest token
        "kq3N-x8vT_2mZr9Lw0pYc7Hs4dFg1aJeUbVnMoQtXiW",  // Python's secrets.token_urlsafe(32)
        "Xq9-b2LmT_7vRc4Z",  // secrets.token_urlsafe(12)
        "0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b",  // a UUID
        "QUJD/EVGR0hJSk+MTU5PUFFS",  // base64 of 18 bytes: 24 characters
        "3f9a2c71d04be885.5e6f1a9c0b7d3e21.f4a8c6d2e9b1705c.3a6f8e2d4b9c1a07",  // hex, dotted
    ])
    func aTokenFileIsRefusedWithoutEchoingTheToken(token: String) throws {
        do {
            _ = try SSHLogin.lines(of: token + "\n", file: "token")
            Issue.record("the token was taken as a login")
        } catch {
            #expect(error.description.hasPrefix("token:1: "))
            for start in 0...(token.count - 9) {
                let piece = token.dropFirst(start).prefix(9)
                #expect(!error.description.contains(piece), "\(error)")
            }
        }
    }

    /// Host names that look like tokens are refused; those that only have digits, or are long,
    /// are not.
    @Test(arguments: [
        ("gpu1", true), ("node-0001.cluster.internal", true), ("ip-10-0-3-7.ec2.internal", true),
        ("skynet-node-7f9c6d5b8-x2lzq", true), ("gke-lab-default-pool-1a2b3c4d-abcd", true), ("deadbeef", true),
        ("GPU1.Lab.Example.ORG", true), ("a1b2c3d4e5f6a7b8", false), ("Gpu1Node2Rack3Xyz", false),
    ])
    func aHostThatLooksLikeATokenIsRefused(host: String, taken: Bool) {
        #expect((problem(host) == nil) == taken, "\(problem(host) ?? "")")
    }

    @Test(arguments: [
        (String(repeating: "a", count: 63) + ".lab", true),
        (String(repeating: "a", count: 64) + ".lab", false),
        ((0..<4).map { _ in String(repeating: "b", count: 63) }.joined(separator: "."), false),  // 255 characters
        ((0..<3).map { _ in String(repeating: "b", count: 63) }.joined(separator: ".") + "." + String(repeating: "c", count: 61), true),
        ("gpu1..lab", false),
        ("gpu1.lab.", true),  // a fully qualified name
    ])
    func aHostNameKeepsTheDNSLimits(host: String, taken: Bool) {
        #expect((problem(host) == nil) == taken, "\(problem(host) ?? "")")
    }

    @Test func aFileIsReadFromDiskAndAMissingOneIsNamed() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-logins-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: SSHLogin.ParseError(description: "ssh login file \(path) does not exist")) { try SSHLogin.file(path) }
        try "a\nb:2\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try SSHLogin.file(path) == [SSHLogin(host: "a"), SSHLogin(host: "b", port: 2)])
    }
}
