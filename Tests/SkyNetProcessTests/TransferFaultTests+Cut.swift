import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests.TransferFaultTests {
    /// Each node behind a proxy of its own; the proxy of whichever node is receiving the
    /// 24 MiB upload is cut in the middle of it. The node removes that connection's directory
    /// at once (the partial file with it); the scan runs the task on the other node.
    @Test func aLinkCutMidUploadRemovesTheNodesConnectionDirectoryAndTheTaskRunsElsewhere() async throws {
        try await TransferHarness.withFolder { folder in
            let data = try TransferHarness.makeFolder(folder + "/data")
            let total = SanitizedRun.bytes(24 << 20)
            let big = try RandomFiles.write(data + "/big.bin", size: total, seed: 2124)
            let list = try TransferHarness.writeList([big], at: folder + "/inputs.txt")
            let scratch = try TokenScratch()
            let token = try TransferHarness.tokenFile(scratch)
            let job = "t=dd if={} of={}.head bs=1024 count=1 status=none"
            try await Self.withNodes(in: folder, token: token, job: job) { nodes, _ in
                let beta = try #require(nodes["beta"]), gamma = try #require(nodes["gamma"])
                try await withRecordingProxy(to: beta.node.port) { betaProxy in
                    try await withRecordingProxy(to: gamma.node.port) { gammaProxy in
                        let cluster = folder + "/proxied.json"
                        try Data(#"{"nodes":[{"name":"beta","host":"127.0.0.1","port":\#(betaProxy.port)},{"name":"gamma","host":"127.0.0.1","port":\#(gammaProxy.port)}]}"#.utf8)
                            .write(to: URL(fileURLWithPath: cluster))
                        let scan = try RunningProcess(["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                       "--inputs", list, "--job", job, "--trc", "{}.head",
                                                       "--failing-every", "0", "--max-attempts", "3"])
                        defer { scan.kill() }
                        var victim: String?
                        _ = await TransferHarness.poll(within: .seconds(120), every: .milliseconds(5)) {
                            for (name, entry) in [("beta", beta), ("gamma", gamma)] {
                                if let size = TransferHarness.sizes(of: "big.bin", under: entry.workDir).first, size >= total / 24, size < total {
                                    victim = name
                                    return true
                                }
                            }
                            return false
                        }
                        let name = try #require(victim, "no node was seen writing big.bin: \(scan.lines)")
                        let (cut, survivor) = name == "beta" ? (betaProxy, "gamma") : (gammaProxy, "beta")
                        let workDir = name == "beta" ? beta.workDir : gamma.workDir
                        await cut.stop()
                        // The issue asks for 1 s; 2 s leaves room for a loaded machine.
                        let gone = await TransferHarness.poll(within: .seconds(2)) {
                            !RandomFiles.tree(workDir).contains { $0.contains("/conn-") }
                        }
                        #expect(gone, "left on \(name): \(RandomFiles.tree(workDir).sorted())")

                        let run = try await scan.finish(timeout: .seconds(120))
                        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                        #expect(run.completions.map(\.input) == [0] && run.completions.first?.system == survivor, "\(run.stdout)")
                        #expect(run.reruns.count == 1 && run.reruns[0].contains("\(name) disconnected"), "\(run.stdout)")
                        let head = try #require(FileHandle(forReadingAtPath: big)).read(upToCount: 1024)
                        #expect(try Data(contentsOf: URL(fileURLWithPath: big + ".head")) == head)
                        #expect(RandomFiles.tree(data) == ["big.bin (\(total))", "big.bin.head (1024)"])
                    }
                }
            }
        }
    }
}
