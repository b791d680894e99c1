import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// `skynet scan --spawn 2 --token-file F --local-capacity 0 --job 't=cp {} {}.out' --trc '{}.out'`
    /// as a user types it: every input travels to a node over an encrypted link, is copied
    /// there and comes back byte for byte; the inputs stay as they were and the nodes keep nothing.
    @Suite(.serialized, .timeLimit(.minutes(6)))
    struct TransferRoundTripTests {
        /// The inputs (relative to the scan's directory) and their sizes: empty, one byte, a
        /// chunk boundary plus one, 100 MiB (400 chunks, far more than any buffer holds; an eighth
        /// of it under a sanitizer, still 50), and
        /// names a shell or a careless path join would break.
        static let relativeInputs: [(path: String, size: Int)] = [
            ("empty.bin", 0),
            ("one byte.bin", 1),
            ("mib plus one.bin", (1 << 20) + 1),
            ("big.bin", SanitizedRun.bytes(100 << 20)),
            (#"it's "quoted" $(x).bin"#, 5_000),
            ("café ☕ ü.bin", 3_000),
            ("sub dir/nested/deep.bin", 70_000),
        ]

        static let job = ["--job", "t=cp {} {}.out", "--trc", "{}.out", "--failing-every", "0"]

        @Test func randomFilesComeBackByteExactOverATokenLinkAndTheNodesKeepNothing() async throws {
            try await TransferHarness.withFolder { folder in
                let work = try TransferHarness.makeFolder(folder + "/work")
                let nodes = try TransferHarness.makeFolder(folder + "/nodes")
                let elsewhere = try TransferHarness.makeFolder(folder + "/else where")
                var inputs: [String] = []
                for (index, input) in Self.relativeInputs.enumerated() {
                    try RandomFiles.write(work + "/" + input.path, size: input.size, seed: 2100 + UInt64(index))
                    inputs.append(input.path)
                }
                // Given by its absolute path: the node writes it under its work directory with
                // the leading / removed, and its return comes back beside it here.
                let absolute = try RandomFiles.write(elsewhere + "/absolute input.bin", size: 65_537, seed: 2199)
                inputs.append(absolute)
                try TransferHarness.writeList(inputs, at: work + "/inputs.txt")
                let paths = inputs.map { $0.hasPrefix("/") ? $0 : work + "/" + $0 }
                let digests = try await RandomFiles.sha256(paths)
                let times = try paths.map { try FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date }
                let before = RandomFiles.tree(folder)

                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                // Spawned nodes inherit the scan's environment: TMPDIR is where they make their roots.
                let watcher = RootWatcher(nodes)
                let run = try await TransferHarness.run(
                    in: work, ["scan", "--spawn", "2", "--token-file", token, "--local-capacity", "0",
                               "--inputs", "inputs.txt"] + Self.job,
                    environment: ["TMPDIR": nodes], limit: .seconds(300))
                let nodesUsedTheirFolder = watcher.stop()

                #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                #expect(run.completions.map(\.input).sorted() == Array(0..<inputs.count), "\(run.stdout)")
                #expect(run.completions.allSatisfy { $0.system == "node1" || $0.system == "node2" }, "\(run.stdout)")
                #expect(run.reruns.isEmpty, "\(run.stdout)")
                #expect(nodesUsedTheirFolder, "no node root ever appeared in \(nodes): the nodes wrote elsewhere")

                // Each copy is its input byte for byte (SHA-256 by sha256sum, then the bytes).
                let copies = try await RandomFiles.sha256(paths.map { $0 + ".out" })
                for (index, path) in paths.enumerated() {
                    #expect(copies[index] == digests[index], "\(path).out differs from its input")
                    #expect(RandomFiles.sameBytes(path, path + ".out"), "\(path).out")
                }
                // The inputs are untouched, and the scan wrote exactly the returned files.
                #expect(try await RandomFiles.sha256(paths) == digests)
                #expect(try paths.map { try FileManager.default.attributesOfItem(atPath: $0)[.modificationDate] as? Date } == times)
                let written = RandomFiles.tree(folder).subtracting(before).filter { !$0.hasSuffix("/") && !$0.hasPrefix("nodes/") }
                let expected = Set(zip(inputs, Self.relativeInputs.map(\.size) + [65_537]).map { input, size in
                    (input.hasPrefix("/") ? String(input.dropFirst(folder.count + 1)) : "work/" + input) + ".out (\(size))"
                })
                #expect(written == expected, "besides the returned files: \(written.subtracting(expected))")
                #expect(TransferHarness.partFiles(RandomFiles.tree(folder)).isEmpty)
                // The spawned nodes were stopped with the scan: their roots went with them.
                let empty = await TransferHarness.poll(within: .seconds(5)) { RandomFiles.tree(nodes).isEmpty }
                #expect(empty, "left in the nodes' folder: \(RandomFiles.tree(nodes).sorted())")
            }
        }

        /// A name with a newline cannot be an input line; a `..` component can, and is refused
        /// here before anything is sent: given up at once (re-running cannot help), clearly said.
        @Test func anInputWithADotDotComponentIsRefusedClearlyAndGivenUpAfterOneAttempt() async throws {
            try await TransferHarness.withFolder { folder in
                let work = try TransferHarness.makeFolder(folder + "/work")
                let nodes = try TransferHarness.makeFolder(folder + "/nodes")
                try RandomFiles.write(work + "/ok.bin", size: 1_000, seed: 7)
                try RandomFiles.write(work + "/sub/x.bin", size: 10, seed: 8)
                try TransferHarness.writeList(["ok.bin", "sub/../ok.bin"], at: work + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                let before = RandomFiles.tree(folder)
                let run = try await TransferHarness.run(
                    in: work, ["scan", "--spawn", "1", "--token-file", token, "--local-capacity", "0",
                               "--inputs", "inputs.txt"] + Self.job,
                    environment: ["TMPDIR": nodes], limit: .seconds(60))
                #expect(run.status == 1, "\(run.stdout)\n\(run.stderr)")
                #expect(run.lines.contains(#"Gave up on task 1 after 1 attempts: "sub/../ok.bin": a ".." component is refused"#),
                        "\(run.stdout)")
                #expect(!run.stdout.contains("Re-run task: 1"), "\(run.stdout)")
                #expect(run.completions.map(\.input) == [0], "\(run.stdout)")
                #expect(RandomFiles.sameBytes(work + "/ok.bin", work + "/ok.bin.out"))
                // Nothing but the one returned file was written here.
                #expect(RandomFiles.tree(folder).subtracting(before).filter { !$0.hasSuffix("/") } == ["work/ok.bin.out (1000)"])
            }
        }
    }
}
