import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetDashboard
@testable import SkyNetRuntime

/// `DashboardScript.hmac` run in a real headless Chromium, in strict mode: FIPS 180-4's
/// examples, every length 0…130, RFC 4231's cases, seeded random keys and messages against our
/// Swift `SHA256` / `HMACSHA256`, the login proof over non-ASCII tokens, bad arguments, and
/// the globals the script adds. One Chromium run computes every vector (it is slow to start);
/// each test checks its own group. Without Chromium every test fails, saying what to install.
@Suite struct DashboardHMACScriptTests {
    /// The results of the one Chromium run, in the order of `ScriptVectors.all`.
    private static let run = Task { try await ScriptVectors.runInChromium(ScriptVectors.all) }

    private func check(_ group: ScriptVector.Group) async throws {
        let results = try await Self.run.value.results
        let vectors = ScriptVectors.all.enumerated().filter { $0.element.group == group }
        #expect(!vectors.isEmpty)
        for (index, vector) in vectors {
            #expect(results[index] == vector.expected, "\(vector.label)")
        }
    }

    @Test func theNISTExamplesHashToTheirPublishedDigests() async throws { try await check(.nist) }

    /// Across the padding's edges: 55 bytes fit one block, 56…63 push the length into a
    /// second, 64 and 128 start a new one.
    @Test func everyLengthFromZeroTo130HashesAsOurSwiftSHA256() async throws { try await check(.lengths) }

    @Test func rfc4231CasesOneToFourSixAndSevenGiveTheirTags() async throws { try await check(.rfc4231) }

    @Test func seededRandomKeysAndMessagesTagAsOurSwiftHMAC() async throws { try await check(.random) }

    /// Includes non-ASCII tokens (the key is their UTF-8) and a token over 64 bytes.
    @Test func theProofIsTheTagOfTheTokensUTF8OverTheChallenge() async throws { try await check(.proof) }

    @Test func badArgumentsThrowATypeError() async throws { try await check(.badArguments) }

    @Test func theScriptAddsOnlyItsFourFunctionsAsGlobals() async throws {
        let globals = try await Self.run.value.globals
        #expect(globals == ["skynetSHA256", "skynetHMAC", "skynetHex", "skynetDashboardProof"])
    }
}

/// One computation for the page: `op` on `first` and `second`, and what it must give.
struct ScriptVector: Sendable {
    enum Group: Sendable { case nist, lengths, rfc4231, random, proof, badArguments }
    let group: Group
    /// "sha" (first: hex), "hmac" (key hex, message hex), "proof" (token, nonce text), or
    /// "shaOfArray" / "hmacOfStrings" (arguments of the wrong type).
    let op: String
    /// Nil: the number 42 instead of a string.
    let first: String?
    var second = ""
    let expected: String
    let label: String
}

enum ScriptVectors {
    static let challenge = "skynet dashboard proof\n"

    static let all: [ScriptVector] = nist + lengths + rfc4231 + random + proofs + badArguments

    private static func sha(_ group: ScriptVector.Group, _ bytes: [UInt8], _ expected: String, _ label: String) -> ScriptVector {
        ScriptVector(group: group, op: "sha", first: Secrets.hex(bytes), expected: expected, label: label)
    }

    private static func hmac(_ group: ScriptVector.Group, _ key: [UInt8], _ message: [UInt8], _ expected: String, _ label: String) -> ScriptVector {
        ScriptVector(group: group, op: "hmac", first: Secrets.hex(key), second: Secrets.hex(message), expected: expected, label: label)
    }

    private static func proof(_ token: String?, _ nonce: String, _ expected: String, _ label: String, group: ScriptVector.Group = .proof) -> ScriptVector {
        ScriptVector(group: group, op: "proof", first: token, second: nonce, expected: expected, label: label)
    }

    /// FIPS 180-4's examples with their published digests.
    private static let nist = [
        sha(.nist, [], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty"),
        sha(.nist, Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc"),
        sha(.nist, Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448 bits"),
        sha(.nist, Array(("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                          + "klmnopqrlmnopqrsmnopqrstnopqrstu").utf8),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", "896 bits"),
    ]

    private static let lengths = (0...130).map { count in
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        return sha(.lengths, bytes, Secrets.hex(SHA256.hash(bytes)), "\(count) bytes")
    }

    private static let rfc4231: [ScriptVector] = {
        func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }
        let longKey = repeated(0xaa, 131)
        return [
            hmac(.rfc4231, repeated(0x0b, 20), Array("Hi There".utf8),
                 "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "case 1"),
            hmac(.rfc4231, Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
                 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "case 2"),
            hmac(.rfc4231, repeated(0xaa, 20), repeated(0xdd, 50),
                 "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", "case 3"),
            hmac(.rfc4231, Secrets.bytes(fromHex: "0102030405060708090a0b0c0d0e0f10111213141516171819") ?? [],
                 repeated(0xcd, 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", "case 4"),
            hmac(.rfc4231, longKey, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", "case 6"),
            hmac(.rfc4231, longKey, Array(("This is a test using a larger than block-size key and a larger than block-size data."
                                           + " The key needs to be hashed before being used by the HMAC algorithm.").utf8),
                 "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", "case 7"),
        ]
    }()

    /// 50 seeded random pairs; the first keys and messages sit on either side of the block
    /// (the inner hash pads 64 + message bytes, so messages of 55, 56, 63, 64 bytes matter).
    private static let random: [ScriptVector] = {
        var random = SeededRandom(seed: 2025)
        let keyCounts = [0, 63, 64, 65, 200], messageCounts = [55, 56, 63, 64, 0, 1]
        return (0..<50).map { index in
            let key = randomBytes(index < keyCounts.count ? keyCounts[index] : Int(random.next() % 201), using: &random)
            let message = randomBytes(index < messageCounts.count ? messageCounts[index] : Int(random.next() % 301), using: &random)
            let tag = Secrets.hex(HMACSHA256(key: key).tag(message))
            return hmac(.random, key, message, tag, "pair \(index): key \(key.count) bytes, message \(message.count) bytes")
        }
    }()

    private static let proofs: [ScriptVector] = {
        var random = SeededRandom(seed: 2104)
        let tokens = ["", "a token of at least sixteen bytes", "jeton-été-🔑", "令牌-テスト-токен", "e\u{301}\u{0}tab\there",
                      String(repeating: "ü-long-token-", count: 8)]
        let computed = tokens.map { token in
            let nonce = Secrets.hex(randomBytes(32, using: &random))
            let tag = HMACSHA256(key: Array(token.utf8)).tag(Array((challenge + nonce).utf8))
            return proof(token, nonce, Secrets.hex(tag), "token \(token.debugDescription), \(token.utf8.count) bytes")
        }
        // From `openssl dgst -sha256 -hmac TOKEN` over the challenge, so the message's form is
        // pinned by something other than our own Swift.
        return computed + [
            proof("correct horse battery staple", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                  "85025249381b607b44e28637d31d05721601ef16429dc4906419b8e0cbeef8cb", "openssl, ASCII token"),
            proof("jeton-été-🔑", String(repeating: "f", count: 64),
                  "d143ca6db25f1d4f448a8e8ecad1d74a2c7fcc3f5b98a560f5a4b34aede82c83", "openssl, non-ASCII token"),
        ]
    }()

    private static let badArguments: [ScriptVector] = {
        let nonce = String(repeating: "ab", count: 32), thrown = "throws TypeError"
        return [
            proof(nil, nonce, thrown, "a number as the token", group: .badArguments),
            proof("token", nonce.uppercased(), thrown, "an uppercase nonce", group: .badArguments),
            proof("token", String(nonce.dropLast()), thrown, "a nonce of 63 digits", group: .badArguments),
            proof("token", nonce + "a", thrown, "a nonce of 65 digits", group: .badArguments),
            proof("token", "g" + nonce.dropFirst(), thrown, "a nonce with a non-hex digit", group: .badArguments),
            proof("token", nonce + "\n", thrown, "a nonce with a newline after it", group: .badArguments),
            ScriptVector(group: .badArguments, op: "shaOfArray", first: "", expected: thrown, label: "SHA-256 of an Array"),
            ScriptVector(group: .badArguments, op: "hmacOfStrings", first: "", expected: thrown, label: "HMAC of strings"),
        ]
    }()
}

extension ScriptVectors {
    /// What the page computed: one line per vector, and the globals the script added.
    struct Run: Sendable {
        let results: [String]
        let globals: Set<String>
    }

    /// Loads a page that runs `vectors` through the script in headless Chromium and reads the
    /// results back from the DOM Chromium dumps.
    static func runInChromium(_ vectors: [ScriptVector]) async throws -> Run {
        let dom = try await dumpedDOM(ofPage: page(vectors))
        guard let start = dom.range(of: #"<pre id="results">"#), let end = dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex) else {
            throw ToolError(description: "no results in the page Chromium dumped:\n\(dom.prefix(2000))")
        }
        var lines = dom[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count == vectors.count + 2, lines.last == "done", let globals = lines[vectors.count].wholeMatch(of: /globals (.*)/) else {
            throw ToolError(description: "the page did not finish its vectors:\n\(lines.prefix(5).joined(separator: "\n"))")
        }
        lines.removeLast(2)
        return Run(results: lines, globals: Set(globals.1.split(separator: " ").map(String.init)))
    }

    /// The page: the script under test in a strict-mode `<script>` of its own between a
    /// snapshot of the window's properties and the driver, which writes one line per vector.
    private static func page(_ vectors: [ScriptVector]) throws -> String {
        let list = vectors.map { vector -> [String: Any] in
            ["op": vector.op, "first": vector.first ?? 42, "second": vector.second]
        }
        // JSONSerialization writes "/" as "\/", so no "</script>" can end the script early.
        let json = String(decoding: try JSONSerialization.data(withJSONObject: list), as: UTF8.self)
        return #"""
        <!doctype html>
        <html><head><meta charset="utf-8"><title>skynet hmac test</title></head><body>
        <pre id="results">not run</pre>
        <script>window.skynetTestBefore = Object.getOwnPropertyNames(window);</script>
        <script>'use strict';
        \#(DashboardScript.hmac)
        </script>
        <script>
        (() => {
          'use strict';
          const vectors = \#(json);
          const bytes = (hex) => new Uint8Array((hex.match(/../g) || []).map((pair) => parseInt(pair, 16)));
          const run = (vector) => {
            try {
              switch (vector.op) {
                case 'sha': return skynetHex(skynetSHA256(bytes(vector.first)));
                case 'hmac': return skynetHex(skynetHMAC(bytes(vector.first), bytes(vector.second)));
                case 'proof': return skynetDashboardProof(vector.first, vector.second);
                case 'shaOfArray': return skynetHex(skynetSHA256([1, 2, 3]));
                case 'hmacOfStrings': return skynetHex(skynetHMAC('key', 'message'));
              }
              return 'unknown op ' + vector.op;
            } catch (error) {
              return 'throws ' + error.name;
            }
          };
          const lines = vectors.map(run);
          const added = Object.getOwnPropertyNames(window)
            .filter((name) => name !== 'skynetTestBefore' && !window.skynetTestBefore.includes(name));
          lines.push('globals ' + added.join(' '), 'done');
          document.getElementById('results').textContent = lines.join('\n');
        })();
        </script>
        </body></html>
        """#
    }

    /// Loads `page` from a temporary folder in headless Chromium (a process group of its own,
    /// killed whole when it exits or after 120 s) and returns the DOM it dumps. A missing
    /// Chromium fails the test with what to install: CI installs it, so this never skips.
    static func dumpedDOM(ofPage page: String) async throws -> String {
        let chromium = "/usr/bin/chromium"
        guard FileManager.default.isExecutableFile(atPath: chromium) else {
            throw ToolError(description: "headless Chromium is needed at \(chromium) for the dashboard's browser tests: "
                + "apt-get install chromium (CI's .ci/run installs it)")
        }
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }  // Chromium reads the page and writes its profile there
        let file = try directory.write(Array(page.utf8), named: "page.html")
        var options = ChildProcess.Options(arguments: [
            "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(directory.path)/profile",
            "--dump-dom", "file://\(file)",
        ])
        options.stdout = .bytes(limit: 4 << 20)
        options.stderr = .tail(bytes: 4096)
        options.ownProcessGroup = true
        options.endGroupOnExit = true
        let child = try ChildProcess.spawn(chromium, options)
        let ended: ChildExit
        do {
            ended = try await withTimeout(.seconds(120)) { await child.exit.value }
        } catch {
            await child.stop(grace: .seconds(2))
            throw ToolError(description: "Chromium did not finish the page within 120 s (\(error))")
        }
        // A helper of Chromium's outside its group could hold stdout open: stop reading soon.
        child.abandonOutput(after: .seconds(10))
        let output = await child.capturedOutput
        guard ended.succeeded, let stdout = output?.stdout, !stdout.overflowed else {
            let stderr = String(decoding: output?.stderr?.bytes ?? [], as: UTF8.self)
            throw ToolError(description: "Chromium \(ended) dumping the page: \(stderr)")
        }
        return String(decoding: stdout.bytes, as: UTF8.self)
    }
}
