import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetRuntime
@testable import SkyNetScheduler
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// A coordinator that knows the token but not the rules: over an encrypted link to a
    /// real `skynet node`, it sends paths that climb out (`..`), absolute and overlong paths,
    /// chunks at the wrong offsets, a wrong digest, and asks back a symbolic link its job
    /// planted. Each is refused with the code docs/PROTOCOL.md ("Files") gives it, and nothing
    /// appears (or changes) in the sandbox outside the node's --work-dir.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct HostileCoordinatorTests {
        /// The node's jobs: an honest copy, and two that plant links for a return to follow.
        static func jobs(outside: String) -> [String] {
            ["--job", "t=cp {} {}.out", "--job", "link=ln -s /etc/passwd {}.out", "--job", "linkdir=ln -s \(outside) {}.d"]
        }

        /// A `transfer` header, written by hand: `input` is sent as is, `size` nil for none.
        static func transfer(id: Int, job: String = "t", input: String, size: Int?, returns: [String] = [], cleanup: Bool = false) -> String {
            let file = size.map { #","file":{"size":\#($0),"mode":420,"mtime_ns":1732441234123456789}"# } ?? ""
            return #"{"type":"transfer","id":\#(id),"job":"\#(job)","task":{"id":"\#(UUID().uuidString.lowercased())","sector":\#(id),"input":\#(json(input)),"timeout":30}\#(file),"returns":[\#(returns.map(json).joined(separator: ","))],"max_return_size":1073741824,"cleanup":\#(cleanup)}"#
        }

        static func basefile(id: Int, path: String, size: Int) -> String {
            #"{"type":"basefile","id":\#(id),"path":\#(json(path)),"size":\#(size),"mode":493,"mtime_ns":1732441234123456789}"#
        }

        /// `text` as a JSON string.
        static func json(_ text: String) -> String {
            String(decoding: (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8),
                   as: UTF8.self).dropFirst().dropLast().description
        }

        static func sha256Hex(_ bytes: [UInt8]) -> String { Secrets.hex(SHA256.hash(bytes)) }

        /// One hostile request, what the node must answer it with, and what its message must say.
        struct Attempt: Sendable {
            let name: String
            let lines: @Sendable (Int) -> [String]
            let bytes: [UInt8]
            let type: String
            let code: String
            let says: String
        }

        static func attempts(sandbox: String) -> [Attempt] {
            let five = Array("hello".utf8)
            let digest = sha256Hex(five)
            // From the task's directory (root/conn-1/task-N-K) four `..` reach the sandbox.
            let climb = "../../../../escaped.txt"
            let long = String(repeating: "abcdefgh/", count: 455) + "tail.txt"  // 4,103 bytes, components of 8
            let wide = String(repeating: "w", count: 256) + ".txt"
            return [
                Attempt(name: "an input climbing out", lines: { [transfer(id: $0, input: climb, size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: #"a ".." component is refused"#),
                Attempt(name: "an absolute input", lines: { [transfer(id: $0, input: sandbox + "/absolute.txt", size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: "absolute.txt\": an absolute path is refused"),
                Attempt(name: "a 4 KiB input path", lines: { [transfer(id: $0, input: long, size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: "is 4103 bytes long, over the 4096 a path may have"),
                Attempt(name: "a component over 255 bytes", lines: { [transfer(id: $0, input: wide, size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: "is over 255 bytes"),
                Attempt(name: "a return climbing out", lines: { [transfer(id: $0, input: "a.txt", size: 5, returns: [climb])] }, bytes: five,
                        type: "error", code: "bad-request", says: #"returns[0] "../../../../escaped.txt": a ".." component is refused"#),
                Attempt(name: "an absolute return", lines: { [transfer(id: $0, input: "a.txt", size: 5, returns: [sandbox + "/outside/keep.txt"])] },
                        bytes: five, type: "error", code: "bad-request", says: "keep.txt\": an absolute path is refused"),
                Attempt(name: "a basefile climbing out", lines: { [basefile(id: $0, path: climb, size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: #"path "../../../../escaped.txt": a ".." component is refused"#),
                Attempt(name: "an absolute basefile", lines: { [basefile(id: $0, path: sandbox + "/base.sh", size: 5)] }, bytes: five,
                        type: "error", code: "bad-request", says: "base.sh\": an absolute path is refused"),
                Attempt(name: "a chunk beyond the bytes so far", lines: { id in
                    [transfer(id: id, input: "gap.txt", size: 10),
                     #"{"type":"data","id":\#(id),"offset":5,"data":"\#(Data(five).base64EncodedString())"}"#]
                }, bytes: [], type: "failure", code: "bad-file", says: "gap.txt arrived altered: a chunk at offset 5, 0 bytes expected"),
                Attempt(name: "bytes past the size", lines: { id in
                    [transfer(id: id, input: "past.txt", size: 3),
                     #"{"type":"data","id":\#(id),"offset":0,"data":"\#(Data(five).base64EncodedString())"}"#]
                }, bytes: [], type: "failure", code: "bad-file", says: "past.txt arrived altered: more than the 3 bytes announced"),
                Attempt(name: "a wrong digest", lines: { id in
                    [transfer(id: id, input: "altered.txt", size: 5),
                     #"{"type":"data","id":\#(id),"offset":0,"data":"\#(Data(five).base64EncodedString())"}"#,
                     #"{"type":"end","id":\#(id),"sha256":"\#(sha256Hex(Array("jello".utf8)))"}"#]
                }, bytes: [], type: "failure", code: "bad-file", says: "altered.txt arrived altered"),
                Attempt(name: "a return that is a link the job planted", lines: {
                    [transfer(id: $0, job: "link", input: "a.txt", size: 5, returns: ["a.txt.out"], cleanup: true)]
                }, bytes: five, type: "failure", code: "missing-return", says: "a.txt.out is a symbolic link: not returned"),
                Attempt(name: "a return through a directory link the job planted", lines: {
                    [transfer(id: $0, job: "linkdir", input: "a.txt", size: 5, returns: ["a.txt.d/keep.txt"], cleanup: true)]
                }, bytes: five, type: "failure", code: "missing-return", says: "a.txt.d/keep.txt passes through a symbolic link (a.txt.d): not returned"),
            ].map { attempt in
                // The file's bytes and end follow the header whenever the attempt has some.
                attempt.bytes.isEmpty ? attempt : Attempt(name: attempt.name, lines: { id in
                    attempt.lines(id) + fileLines(id: id, attempt.bytes, digest: digest)
                }, bytes: attempt.bytes, type: attempt.type, code: attempt.code, says: attempt.says)
            }
        }

        static func fileLines(id: Int, _ bytes: [UInt8], digest: String) -> [String] {
            [#"{"type":"data","id":\#(id),"offset":0,"data":"\#(Data(bytes).base64EncodedString())"}"#,
             #"{"type":"end","id":\#(id),"sha256":"\#(digest)"}"#]
        }

        @Test func everyHostileRequestIsRefusedWithItsCodeAndNothingAppearsOutsideTheWorkDir() async throws {
            try await TransferHarness.withFolder { sandbox in
                let work = try TransferHarness.makeFolder(sandbox + "/work")
                let outside = try TransferHarness.makeFolder(sandbox + "/outside")
                try Data("keep me".utf8).write(to: URL(fileURLWithPath: outside + "/keep.txt"))
                let scratch = try TokenScratch()
                let token = TokenScratch.randomToken()
                let tokenFile = try scratch.tokenFile(token + "\n")
                let node = try await SkynetNode.start(name: "beta", ["--work-dir", work, "--token-file", tokenFile] + Self.jobs(outside: outside))
                let before = RandomFiles.tree(sandbox).filter { !$0.hasPrefix("work/") }
                let attempts = Self.attempts(sandbox: sandbox)
                let port = node.port
                var answers = try await onOwnThread(named: "test-hostile") { () throws -> [[NodeMessage]] in
                    var client = try SealedLineClient(port: port, token: token)
                    defer { client.close() }
                    var answers: [[NodeMessage]] = []
                    for (index, attempt) in attempts.enumerated() {
                        for line in attempt.lines(index + 1) { try client.send(line) }
                        answers.append(try client.reply(to: index + 1))
                    }
                    // The node still serves this connection honestly after all that.
                    let honest = Array("honest bytes".utf8)
                    try client.send(Self.transfer(id: 99, input: "honest.txt", size: honest.count, returns: ["honest.txt.out"], cleanup: true))
                    try client.sendFile(id: 99, honest, digest: Self.sha256Hex(honest))
                    answers.append(try client.reply(to: 99))
                    // While the connection lasts: every refused or failed request left no
                    // task directory (the honest one's goes with its cleanup, on a thread).
                    let deadline = ContinuousClock.now + .seconds(5)
                    while RandomFiles.tree(work).contains(where: { $0.contains("/task-") }), ContinuousClock.now < deadline {
                        usleep(10_000)
                    }
                    answers.append(RandomFiles.tree(work).filter { $0.contains("/task-") }.map {
                        NodeMessage(["type": "left", "message": $0])
                    })
                    return answers
                }
                for (index, attempt) in attempts.enumerated() {
                    let reply = try #require(answers[index].last, "\(attempt.name): no answer")
                    #expect(reply.id == index + 1, "\(attempt.name): \(answers[index])")
                    #expect(reply.type == attempt.type, "\(attempt.name): \(reply)")
                    #expect(reply.code == attempt.code, "\(attempt.name): \(reply)")
                    #expect(reply.message?.contains(attempt.says) == true, "\(attempt.name): \(reply)")
                    // Nothing came back before the refusal: no file's bytes ever went out.
                    #expect(!answers[index].contains { ["return", "data", "end"].contains($0.type) }, "\(attempt.name): \(answers[index])")
                }
                let left = answers.removeLast()
                #expect(left.isEmpty, "task directories left while the connection lasts: \(left)")
                let honest = answers.last ?? []
                #expect(honest.last?.type == "result", "\(honest)")
                #expect(honest.compactMap(\.data).reduce(Data(), +) == Data("honest bytes".utf8))

                // Outside the work dir nothing appeared or changed; inside, the connection's
                // directory went when it closed.
                #expect(RandomFiles.tree(sandbox).filter { !$0.hasPrefix("work/") } == before)
                let closed = await TransferHarness.poll(within: .seconds(5)) {
                    !RandomFiles.tree(work).contains { $0.contains("/conn-") }
                }
                #expect(closed, "\(RandomFiles.tree(work).sorted())")
                let log = try await node.stop()
                #expect(RandomFiles.tree(work).isEmpty, "the stopped node removed its root: \(RandomFiles.tree(work).sorted())")
                #expect(!log.stdout.contains(token) && !log.stderr.contains(token))
            }
        }
    }
}
