import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests {
    /// Files that travel when something goes wrong: a node killed in the middle of an upload,
    /// an input over `--max-file-size`, a node that takes no files, a job that leaves no file.
    /// The nodes are real `skynet node` processes on loopback, each with its own `--work-dir`.
    @Suite(.serialized, .timeLimit(.minutes(6)))
    struct TransferFaultTests {
        /// Two nodes (beta, gamma) with `--work-dir` under `folder` and the token; `extra[name]`
        /// adds arguments to one of them. Stops both on every path (`SkynetNode` kills on drop).
        static func withNodes<T>(
            in folder: String, token: String, job: String = "t=cp {} {}.out", extra: [String: [String]] = [:],
            _ body: ([String: (node: SkynetNode, workDir: String)], String) async throws -> T
        ) async throws -> T {
            var nodes: [String: (node: SkynetNode, workDir: String)] = [:]
            for name in ["beta", "gamma"] {
                let workDir = try TransferHarness.makeFolder(folder + "/node-" + name)
                let node = try await SkynetNode.start(
                    name: name, ["--work-dir", workDir, "--token-file", token, "--job", job] + (extra[name] ?? []))
                nodes[name] = (node, workDir)
            }
            let cluster = folder + "/cluster.json"
            let entries = ["beta", "gamma"].compactMap { name in
                nodes[name].map { #"{"name":"\#(name)","host":"127.0.0.1","port":\#($0.node.port)}"# }
            }
            try Data(#"{"nodes":[\#(entries.joined(separator: ","))]}"#.utf8).write(to: URL(fileURLWithPath: cluster))
            do {
                let result = try await body(nodes, cluster)
                for (_, entry) in nodes { _ = try? await entry.node.stop() }
                return result
            } catch {
                for (_, entry) in nodes { entry.node.process.kill() }
                throw error
            }
        }

        /// The 100 MiB upload (an eighth under a sanitizer) to whichever node got it is cut by a
        /// SIGKILL part way (a 25th of it in): the task
        /// runs again on the other node (which checks every byte by SHA-256 on arrival) and
        /// its returned file comes back; no `.part` is left here.
        @Test func aNodeKilledPartWayThroughAnUploadLosesItsTaskToTheOtherNodeAndNothingPartialStays() async throws {
            try await TransferHarness.withFolder { folder in
                let data = try TransferHarness.makeFolder(folder + "/data")
                let size = SanitizedRun.bytes(100 << 20)
                let big = try RandomFiles.write(data + "/big.bin", size: size, seed: 2104)
                let digest = try await RandomFiles.sha256(big)
                let list = try TransferHarness.writeList([big], at: folder + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                // The job returns the first KiB only: the upload is what this test is about,
                // and a 100 MiB return costs half a minute of a debug build's hashing.
                let job = "t=dd if={} of={}.head bs=1024 count=1 status=none"
                try await Self.withNodes(in: folder, token: token, job: job) { nodes, cluster in
                    let scan = try RunningProcess(["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                   "--inputs", list, "--job", job, "--trc", "{}.head",
                                                   "--failing-every", "0", "--max-attempts", "3"])
                    defer { scan.kill() }
                    // Whichever node got the task is writing big.bin in its work directory.
                    var victim: String?
                    let caught = await TransferHarness.poll(within: .seconds(120), every: .milliseconds(5)) {
                        for (name, entry) in nodes {
                            let sizes = TransferHarness.sizes(of: "big.bin", under: entry.workDir)
                            if let written = sizes.first, written >= size / 25, written < size {
                                victim = name
                                entry.node.process.send(SIGSTOP)
                                return true
                            }
                        }
                        return false
                    }
                    let name = try #require(victim, "no node was seen writing big.bin: \(scan.lines)")
                    #expect(caught)
                    let killed = try #require(nodes[name])
                    // Stopped before it could finish: the file there is still partial.
                    let partial = TransferHarness.sizes(of: "big.bin", under: killed.workDir)
                    #expect(partial.count == 1 && partial[0] < size, "\(partial)")
                    killed.node.process.kill()
                    let survivor = name == "beta" ? "gamma" : "beta"

                    let run = try await scan.finish(timeout: .seconds(240))
                    #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.completions.map(\.input) == [0], "\(run.stdout)")
                    #expect(run.completions.first?.system == survivor, "\(run.stdout)")
                    #expect(run.reruns.count == 1 && run.reruns[0].hasPrefix("Re-run task: 0. Failed with: ") && run.reruns[0].contains("\(name) disconnected"),
                            "\(run.stdout)")
                    let head = try #require(FileHandle(forReadingAtPath: big)).read(upToCount: 1024)
                    #expect(try Data(contentsOf: URL(fileURLWithPath: big + ".head")) == head)
                    #expect(try await RandomFiles.sha256(big) == digest, "the input is untouched")
                    #expect(TransferHarness.partFiles(RandomFiles.tree(data)).isEmpty, "\(RandomFiles.tree(data))")
                    #expect(RandomFiles.tree(data) == ["big.bin (\(size))", "big.bin.head (1024)"])
                    // The survivor's link ended with the scan: it keeps no directory of it.
                    let survivorDir = try #require(nodes[survivor]).workDir
                    let gone = await TransferHarness.poll(within: .seconds(5)) {
                        !RandomFiles.tree(survivorDir).contains { $0.contains("/conn-") }
                    }
                    #expect(gone, "\(RandomFiles.tree(survivorDir).sorted())")
                }
            }
        }

        /// The coordinator checks the size before sending: an input over `--max-file-size` is
        /// given up at once, the limit named; the others run.
        @Test func anInputOverMaxFileSizeIsGivenUpAfterOneAttemptNamingTheLimit() async throws {
            try await TransferHarness.withFolder { folder in
                let data = try TransferHarness.makeFolder(folder + "/data")
                let large = try RandomFiles.write(data + "/two mib.bin", size: 2 << 20, seed: 1)
                let small = try RandomFiles.write(data + "/small.bin", size: 1 << 20, seed: 2)
                let list = try TransferHarness.writeList([large, small], at: folder + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                try await Self.withNodes(in: folder, token: token) { nodes, cluster in
                    let run = try await runSkynet(["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                   "--inputs", list, "--job", "t=cp {} {}.out", "--trc", "{}.out",
                                                   "--failing-every", "0", "--max-file-size", "1M"], limit: .seconds(60))
                    #expect(run.status == 1, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.lines.contains("Gave up on task 0 after 1 attempts: \(large) is 2 MiB, over the --max-file-size 1 MiB"),
                            "\(run.stdout)")
                    #expect(run.reruns.isEmpty, "\(run.stdout)")
                    #expect(run.completions.map(\.input) == [1], "\(run.stdout)")
                    #expect(RandomFiles.sameBytes(small, small + ".out"))
                    #expect(!FileManager.default.fileExists(atPath: large + ".out"))
                    // Refused before sending: no node ever saw a byte of it.
                    for (_, entry) in nodes {
                        #expect(TransferHarness.sizes(of: "two mib.bin", under: entry.workDir).isEmpty)
                    }
                }
            }
        }

        /// A node started with `--no-files` offers no files in its welcome: the scan says so
        /// once (`lacks-files`) and runs every task on the other node.
        @Test func aNodeWithNoFilesGetsNoTaskAndTheRefusalIsSaid() async throws {
            try await TransferHarness.withFolder { folder in
                let data = try TransferHarness.makeFolder(folder + "/data")
                let inputs = try (0..<6).map { try RandomFiles.write(data + "/in \($0).bin", size: 10_000 + $0, seed: 50 + UInt64($0)) }
                let list = try TransferHarness.writeList(inputs, at: folder + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                try await Self.withNodes(in: folder, token: token, extra: ["gamma": ["--no-files"]]) { nodes, cluster in
                    let run = try await runSkynet(["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                   "--inputs", list, "--job", "t=cp {} {}.out", "--trc", "{}.out",
                                                   "--failing-every", "0"], limit: .seconds(60))
                    #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.completions.map(\.input).sorted() == Array(0..<6), "\(run.stdout)")
                    #expect(run.completions.allSatisfy { $0.system == "beta" }, "\(run.stdout)")
                    let refusal = "[Cluster] Refused by gamma: lacks-files (its welcome offers no files: an older skynet, or one started with --no-files)"
                    #expect(run.lines.filter { $0 == refusal }.count == 1, "\(run.stdout)\n\(run.stderr)")
                    for input in inputs { #expect(RandomFiles.sameBytes(input, input + ".out"), "\(input)") }
                    // gamma never made a work root: no file request ever reached it.
                    #expect(RandomFiles.tree(try #require(nodes["gamma"]).workDir).isEmpty)
                }
            }
        }

        /// A job that leaves no file where its template says fails, by the file's name, and
        /// runs again (here on a node: the name is the one the node was given).
        @Test func aJobThatDoesNotProduceItsReturnFileFailsSayingSoAndRunsAgain() async throws {
            try await TransferHarness.withFolder { folder in
                let work = try TransferHarness.makeFolder(folder + "/work")
                try RandomFiles.write(work + "/photos/a.jpg", size: 3_000, seed: 3)
                try TransferHarness.writeList(["photos/a.jpg"], at: work + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                try await Self.withNodes(in: folder, token: token, job: "t=true") { _, cluster in
                    let run = try await TransferHarness.run(
                        in: work, ["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                   "--inputs", "inputs.txt", "--job", "t=true", "--transfer", "--return", "{.}.png", "--cleanup",
                                   "--failing-every", "0", "--max-attempts", "2"], limit: .seconds(60))
                    #expect(run.status == 1, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.lines.contains("Re-run task: 0. Failed with: did not produce photos/a.png"), "\(run.stdout)")
                    #expect(run.lines.contains("Gave up on task 0 after 2 attempts: did not produce photos/a.png"), "\(run.stdout)")
                    #expect(!FileManager.default.fileExists(atPath: work + "/photos/a.png"))
                    #expect(TransferHarness.partFiles(RandomFiles.tree(work)).isEmpty)
                }
            }
        }

        /// For an input given by its absolute path the node was sent it without the leading
        /// `/`; the failure still names the file the template gave, as the user would look for it.
        @Test func aMissingReturnOfAnAbsoluteInputIsNamedByItsPathHere() async throws {
            try await TransferHarness.withFolder { folder in
                let input = try RandomFiles.write(folder + "/photos/b.jpg", size: 100, seed: 4)
                let list = try TransferHarness.writeList([input], at: folder + "/inputs.txt")
                let scratch = try TokenScratch()
                let token = try TransferHarness.tokenFile(scratch)
                try await Self.withNodes(in: folder, token: token, job: "t=true") { _, cluster in
                    let run = try await runSkynet(["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                   "--inputs", list, "--job", "t=true", "--trc", "{.}.png",
                                                   "--failing-every", "0", "--max-attempts", "1"], limit: .seconds(60))
                    #expect(run.status == 1, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.lines.contains("Gave up on task 0 after 1 attempts: did not produce \(folder)/photos/b.png"), "\(run.stdout)")
                }
            }
        }
    }
}
