import Foundation
@testable import SkyNet
@testable import SkyNetAuth
@testable import SkyNetCluster
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetTransfer
@testable import SkyNetTransport
@testable import SkyNetWire
@testable import SkyNetWork
import Testing

/// A node's side of `transfer` and `basefile`, over a raw client: bytes in, the job run in its
/// work directory, returns out byte-exact, refusals as the protocol says, nothing left behind.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeTransferTests {
    func options(_ sandbox: WorkDirSandbox) throws -> Node.Options {
        var options = NodeHarness().options()
        options.name = "node-x"
        options.workDir = sandbox.path
        try options.jobs.register("t", CommandJob(name: "t", command: try CommandTemplate("cp {} {}.out")))
        try options.jobs.register("run", CommandJob(name: "run", command: try CommandTemplate("./process.sh {}")))
        return options
    }

    /// The lines of one file: `data` chunks of at most 256 KiB, then `end` with its digest.
    func fileLines(id: Int, _ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + maxChunkBytes)
            out += bytes[offset..<end].withUnsafeBytes { FileChunk.line(id: id, file: nil, offset: Int64(offset), bytes: $0) }
            offset = end
        }
        out += Request.fileEnd(FileEnd(id: id, file: nil, sha256: SHA256.hash(bytes))).line
        return out
    }

    func transfer(id: Int, input: String, size: Int64?, returns: [String], cleanup: Bool = false, job: String = "t") -> [UInt8] {
        let task = ScanTask(input: id, duration: 0, job: job, text: input, timeout: 30)
        return Request.transfer(TransferRequest(id: id, task: task, file: size.map { FileHeader(size: $0, mode: 0o644, mtimeNanoseconds: 1_700_000_000_000_000_000) },
                                                returns: returns, maxReturnSize: 1 << 30, cleanup: cleanup)).line
    }

    /// Says hello, then sends `bytes` and reads lines until a `result`, `failure`, `stored`
    /// or `error` for each of `replies` ids came (or the node went silent).
    func converse(_ node: Node, _ bytes: [UInt8], replies: Int) async throws -> (welcome: String, lines: [String]) {
        try await onOwnThread(named: "test-client") { () throws -> (String, [String]) in
            var client = try RawLines(port: node.port)
            defer { client.close() }
            try client.send(#"{"type":"hello","version":1,"name":"raw"}"#)
            let welcome = client.readLine() ?? ""
            try client.send(bytes: bytes)
            var lines: [String] = [], answered = 0
            // The replies come; a bound of a minute only ends a hang (the opening burst of the
            // unit tests holds a node's answer for 15 s on two cores).
            while answered < replies, let line = client.readLine(silence: .seconds(60)) {
                lines.append(line)
                let type = jsonFields(line)?["type"] as? String
                if ["result", "failure", "stored", "error"].contains(type) { answered += 1 }
            }
            return (welcome, lines)
        }
    }

    /// The bytes of return `file` of request `id`, put together from its `data` lines.
    private func returned(_ lines: [String], id: Int, file: Int) -> [UInt8] {
        lines.compactMap { line -> [UInt8]? in
            guard let fields = jsonFields(line), fields["type"] as? String == "data", fields["id"] as? Int == id,
                  fields["file"] as? Int == file, let text = fields["data"] as? String else { return nil }
            return Data(base64Encoded: text).map(Array.init)
        }.flatMap { $0 }
    }

    private func roots(_ sandbox: WorkDirSandbox) -> [String] {
        sandbox.tree().keys.filter { !$0.contains("/") && $0.hasPrefix(WorkRoot.prefix) }
    }

    @Test func aFileGoesInTheJobRunsAndItsReturnComesBackByteExact() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                var random = SeededRandom(seed: 21)
                let bytes = (0..<(1 << 20) + 1).map { _ in UInt8.random(in: 0...255, using: &random) }
                let request = transfer(id: 7, input: "photos/a b.jpg", size: Int64(bytes.count), returns: ["photos/a b.jpg.out"])
                let (welcome, lines) = try await converse(node, request + fileLines(id: 7, bytes), replies: 1)
                let files = jsonFields(welcome)?["files"] as? [String: Any]
                #expect(files?["version"] as? Int == 1 && files?["max_file_size"] as? Int == 1 << 30, "\(welcome)")
                let types = lines.compactMap { jsonFields($0)?["type"] as? String }
                #expect(types.first == "return" && types.last == "result" && types.dropFirst().dropLast().allSatisfy { $0 == "data" || $0 == "end" },
                        "\(types)")
                // Compared by size and digest: a failing `==` on 1 MiB arrays makes the test
                // library diff them element by element, which takes minutes.
                let back = returned(lines, id: 7, file: 0)
                #expect(back.count == bytes.count)
                #expect(SHA256.hash(back) == SHA256.hash(bytes))
                let end = lines.first { jsonFields($0)?["type"] as? String == "end" }.flatMap { jsonFields($0)?["sha256"] as? String }
                #expect(end == Secrets.hex(SHA256.hash(bytes)))
                // The connection closed: its directory goes.
                try await awaitState(upTo: .seconds(10)) {
                    guard let root = self.roots(sandbox).first else { return true }
                    return !sandbox.exists("\(root)/conn-1")
                }
            }
            #expect(roots(sandbox).isEmpty, "the stopped node removed its root")
        }
    }

    @Test func aMissingReturnFailsTheTaskByName() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                let request = transfer(id: 3, input: "a.txt", size: 2, returns: ["a.png"], cleanup: true)
                let (_, lines) = try await converse(node, request + fileLines(id: 3, [1, 2]), replies: 1)
                let reply = try #require(lines.last.flatMap(jsonFields))
                #expect(reply["type"] as? String == "failure")
                #expect(reply["code"] as? String == "missing-return")
                #expect(reply["message"] as? String == "did not produce a.png")
            }
        }
    }

    @Test func hostilePathsAreRefusedAndNothingIsWrittenOutside() async throws {
        try await WorkDirSandbox.with { sandbox in
            try sandbox.write("outside/keep", [1])
            try await NodeHarness().withNode(try options(sandbox)) { node in
                let before = sandbox.tree("outside")
                let requests = transfer(id: 1, input: "a.txt", size: 1, returns: ["../x"])
                    + transfer(id: 2, input: "a.txt", size: 1, returns: [sandbox.at("outside/keep")])
                let (_, lines) = try await converse(node, requests + fileLines(id: 1, [9]) + fileLines(id: 2, [9]), replies: 2)
                let replies = lines.compactMap(jsonFields)
                #expect(replies.map { $0["code"] as? String } == ["bad-request", "bad-request"], "\(lines)")
                #expect(sandbox.tree("outside") == before)
            }
        }
    }

    @Test func aWrongDigestFailsTheTaskAndRemovesItsDirectory() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                var lines = transfer(id: 5, input: "a.txt", size: 3, returns: ["a.txt.out"])
                lines += [1, 2, 3].withUnsafeBytes { FileChunk.line(id: 5, file: nil, offset: 0, bytes: $0) }
                lines += Request.fileEnd(FileEnd(id: 5, file: nil, sha256: SHA256.hash([1, 2, 4]))).line
                let (_, replies) = try await converse(node, lines, replies: 1)
                let reply = try #require(replies.last.flatMap(jsonFields))
                #expect(reply["code"] as? String == "bad-file", "\(replies)")
                let root = try #require(roots(sandbox).first)
                #expect(!sandbox.exists("\(root)/conn-1/task-5-1"))
            }
        }
    }

    @Test func aBasefileIsInEveryTasksDirectoryAndKeepsItsXBit() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                let script = Array("#!/bin/sh\ncat \"$1\"\n".utf8)
                var lines = Request.basefile(BasefileRequest(id: 1, path: "process.sh",
                                                             file: FileHeader(size: Int64(script.count), mode: 0o755, mtimeNanoseconds: 0))).line
                lines += fileLines(id: 1, script)
                lines += transfer(id: 2, input: "in.txt", size: 5, returns: [], job: "run") + fileLines(id: 2, Array("hello".utf8))
                let (_, replies) = try await converse(node, lines, replies: 2)
                let fields = replies.compactMap(jsonFields)
                #expect(fields.first?["type"] as? String == "stored", "\(replies)")
                #expect(fields.last?["type"] as? String == "result" && fields.last?["result"] as? String == "hello", "\(replies)")
            }
        }
    }
}

extension NodeTransferTests {
    @Test func anAbsoluteInputIsABadRequest() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                let request = transfer(id: 7, input: "/photos/a.jpg", size: 3, returns: [])
                let (_, lines) = try await converse(node, request + fileLines(id: 7, [1, 2, 3]), replies: 1)
                #expect(lines.compactMap { jsonFields($0)?["code"] as? String } == ["bad-request"], "\(lines)")
            }
        }
    }
}

extension NodeTransferTests {
    /// A malformed `data` or `end` line of an upload is answered `bad-request` with its id, which
    /// ends the request for the coordinator; the node ends it too: its directory goes, its place
    /// and its id are free again (the same id then runs to a result).
    @Test(arguments: [#"{"type":"data","id":5,"offset":0,"data":"!!not base64!!"}"#,
                      #"{"type":"end","id":5,"sha256":"xyz"}"#,
                      #"{"type":"data","id":5,"file":0,"offset":0,"data":"AQID"}"#])
    func aBadLineOfAnUploadEndsIt(badLine: String) async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                var lines = transfer(id: 5, input: "a.txt", size: 3, returns: ["a.txt.out"])
                lines += Array((badLine + "\n").utf8)
                lines += transfer(id: 5, input: "a.txt", size: 3, returns: ["a.txt.out"]) + fileLines(id: 5, [1, 2, 3])
                let (_, replies) = try await converse(node, lines, replies: 2)
                let fields = replies.compactMap(jsonFields).filter { $0["type"] as? String != "data" && $0["type"] as? String != "end" }
                #expect(fields.first?["code"] as? String == "bad-request" && fields.first?["id"] as? Int == 5, "\(replies)")
                #expect(fields.last?["type"] as? String == "result", "the id is free again: \(replies)")
                #expect(node.files.uploads == 0)
            }
        }
    }
}

extension NodeTransferTests {
    /// An upload whose coordinator sends no chunk for the idle bound fails (`bad-file`, named),
    /// so it cannot hold its descriptor, place and free space while the link lives.
    @Test func anUploadThatStallsFailsAfterTheIdleBound() async throws {
        try await WorkDirSandbox.with { sandbox in
            var options = try options(sandbox)
            options.idleTimeout = .seconds(1)
            try await NodeHarness().withNode(options) { node in
                let (_, replies) = try await converse(node, transfer(id: 4, input: "a.txt", size: 3, returns: []), replies: 1)
                let reply = try #require(replies.last.flatMap(jsonFields))
                #expect(reply["code"] as? String == "bad-file", "\(replies)")
                #expect(reply["message"] as? String == "no bytes of a.txt came for 1 s")
                #expect(node.files.uploads == 0)
            }
        }
    }

    /// A coordinator sends its basefiles one by one: a second one while the first is under way
    /// is `busy`, and the first still arrives.
    @Test func oneBasefileAtATimeOnAConnection() async throws {
        try await WorkDirSandbox.with { sandbox in
            try await NodeHarness().withNode(try options(sandbox)) { node in
                let header = FileHeader(size: 2, mode: 0o644, mtimeNanoseconds: 0)
                var lines = Request.basefile(BasefileRequest(id: 1, path: "one.cfg", file: header)).line
                lines += Request.basefile(BasefileRequest(id: 2, path: "two.cfg", file: header)).line
                lines += fileLines(id: 1, [1, 2])
                let (_, replies) = try await converse(node, lines, replies: 2)
                let fields = replies.compactMap(jsonFields)
                #expect(fields.first?["code"] as? String == "busy" && fields.first?["id"] as? Int == 2, "\(replies)")
                #expect(fields.last?["type"] as? String == "stored" && fields.last?["id"] as? Int == 1, "\(replies)")
            }
        }
    }
}
