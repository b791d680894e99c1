import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// A `convert`-style job: `--job 't=gzip -k {}' --trc '{}.gz'`, over a TCP link with a
    /// token and over SSH links. gzip writes the input's
    /// name and modification time into its header, so the `.gz` a node returns equals, byte for
    /// byte, the one `gzip -k` makes here only if the node's copy kept both.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct GzipReturnTests {
        /// Inputs relative to the scan's directory: compressible text, random bytes, a name
        /// with a space in a subdirectory, and an empty file.
        static let inputs: [(path: String, size: Int, text: Bool)] = [
            ("notes.txt", 200_000, true),
            ("photos/a b.raw", 300_000, false),
            ("photos/ü é.txt", 50_000, true),
            ("empty.log", 0, true),
        ]

        /// What `gzip -k` makes here of a copy of `input` with its name and time, in `scratch`.
        static func localGzip(of input: String, in scratch: String) async throws -> Data {
            let folder = try TransferHarness.makeFolder(scratch + "/\(UUID().uuidString)")
            let copy = folder + "/" + URL(fileURLWithPath: input).lastPathComponent
            try FileManager.default.copyItem(atPath: input, toPath: copy)
            let time = try FileManager.default.attributesOfItem(atPath: input)[.modificationDate]
            try FileManager.default.setAttributes([.modificationDate: time as Any], ofItemAtPath: copy)
            let run = try await ToolRun.run("gzip", ["-k", copy], limit: .seconds(30))
            guard run.exit.succeeded else { throw RandomFiles.Failure(description: "gzip -k \(copy): \(run.exit): \(run.stderr)") }
            return try Data(contentsOf: URL(fileURLWithPath: copy + ".gz"))
        }

        /// Writes `size` bytes of words (compressible) or seeded random bytes at `path`, with a
        /// modification time in the past (so a node that did not keep it writes another header).
        static func write(_ path: String, size: Int, text: Bool, seed: UInt64) throws {
            if text {
                var random = SeededRandom(seed: seed)
                let words = ["alpha", "beta", "gamma", "delta", "files", "travel", "with", "their", "tasks", "\n"]
                var bytes: [UInt8] = []
                while bytes.count < size { bytes += Array((words.randomElement(using: &random) ?? "x").utf8) + [0x20] }
                try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path,
                                                        withIntermediateDirectories: true)
                try Data(bytes.prefix(size)).write(to: URL(fileURLWithPath: path))
            } else {
                try RandomFiles.write(path, size: size, seed: seed)
            }
            let past = Date(timeIntervalSince1970: 1_614_870_000 + Double(seed) * 1_000 + 0.25)
            try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: path)
        }

        /// Writes the inputs into `folder/work` (and one elsewhere, given by its absolute path),
        /// their list as `inputs.txt`, and makes the reference `.gz` of each here; runs `scan`
        /// from `work` with the list and the gzip job, and checks every returned `.gz`.
        static func checkRoundTrip(in folder: String, scan: (String, [String]) async throws -> Finished) async throws {
            let work = try TransferHarness.makeFolder(folder + "/work")
            let reference = try TransferHarness.makeFolder(folder + "/reference")
            var list: [String] = []
            for (index, input) in inputs.enumerated() {
                try write(work + "/" + input.path, size: input.size, text: input.text, seed: 30 + UInt64(index))
                list.append(input.path)
            }
            let absolute = folder + "/elsewhere/absolute.txt"
            try write(absolute, size: 40_000, text: true, seed: 39)
            list.append(absolute)
            try TransferHarness.writeList(list, at: work + "/inputs.txt")
            let paths = list.map { $0.hasPrefix("/") ? $0 : work + "/" + $0 }
            var expected: [Data] = []
            for path in paths { expected.append(try await localGzip(of: path, in: reference)) }

            let run = try await scan(work, ["--local-capacity", "0", "--inputs", "inputs.txt", "--job", "t=gzip -k {}", "--trc", "{}.gz",
                                            "--failing-every", "0"])
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.completions.map(\.input).sorted() == Array(0..<paths.count), "\(run.stdout)")
            #expect(run.completions.allSatisfy { $0.system != nil }, "\(run.stdout)")
            for (index, path) in paths.enumerated() {
                let returned = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
                #expect(returned == expected[index], "\(path).gz: \(returned.count) bytes, gzip -k here made \(expected[index].count)")
            }
        }

        @Test func eachReturnedGzEqualsGzipKRunHereOverATokenLink() async throws {
            try await TransferHarness.withFolder { folder in
                let nodes = try TransferHarness.makeFolder(folder + "/nodes")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                try await Self.checkRoundTrip(in: folder) { work, arguments in
                    try await TransferHarness.run(in: work, ["scan", "--spawn", "2", "--token-file", token] + arguments,
                                                  environment: ["TMPDIR": nodes], limit: .seconds(120))
                }
                let empty = await TransferHarness.poll(within: .seconds(5)) { RandomFiles.tree(nodes).isEmpty }
                #expect(empty, "\(RandomFiles.tree(nodes).sorted())")
            }
        }

        @Test(.enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
        func eachReturnedGzEqualsGzipKRunHereOverSSHLinks() async throws {
            try await withSSHTestHosts(count: 2, options: SSHTestHost.Options(skynet: skynetBinary.path)) { hosts, client in
                try await TransferHarness.withFolder { folder in
                    try await Self.checkRoundTrip(in: folder) { work, arguments in
                        try await TransferHarness.run(
                            in: work, ["scan", "--ssh", hosts.map { "2/" + $0.login }.joined(separator: ","),
                                       "--ssh-command", client.commandLine()] + arguments, limit: .seconds(120))
                    }
                }
            }
        }
    }
}
