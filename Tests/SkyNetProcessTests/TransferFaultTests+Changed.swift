import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests.TransferFaultTests {
    /// An input appended to while its upload is under way: the coordinator sees the size change
    /// when it has sent the bytes it announced, fails the task with `file-changed` (both sizes
    /// said) and sends it again whole; the node's copy of the second attempt is the new file.
    @Test func anInputThatGrowsWhileItIsSentFailsWithFileChangedAndIsSentAgain() async throws {
        try await TransferHarness.withFolder { folder in
            let work = try TransferHarness.makeFolder(folder + "/work")
            let size = SanitizedRun.bytes(24 << 20)
            try RandomFiles.write(work + "/grows.bin", size: size, seed: 2125)
            let list = try TransferHarness.writeList(["grows.bin"], at: folder + "/inputs.txt")
            let scratch = try TokenScratch()
            let token = try TransferHarness.tokenFile(scratch)
            // The job returns the input's size, which the second attempt must see grown.
            let job = "t=wc -c {}"
            try await Self.withNodes(in: folder, token: token, job: job) { nodes, cluster in
                let options: ChildProcess.Options = {
                    var options = ChildProcess.Options(arguments: ["scan", "--cluster", cluster, "--token-file", token, "--local-capacity", "0",
                                                                   "--inputs", list, "--job", job, "--transfer", "--cleanup",
                                                                   "--failing-every", "0", "--max-attempts", "3", "--results"],
                                                       environment: nil)
                    options.stdout = .lines(keep: 10_000)
                    options.stderr = .lines(keep: 10_000)
                    options.workingDirectory = work
                    return options
                }()
                // posix_spawn holds its caller until the child has exec'd: not on the cooperative pool.
                let scan = try await onOwnThread(named: "test-spawn") { try ChildProcess.spawn(skynetBinary.path, options) }
                defer { scan.send(SIGKILL) }
                let appended = await TransferHarness.poll(within: .seconds(60), every: .milliseconds(5)) {
                    for (_, entry) in nodes {
                        if let partial = TransferHarness.sizes(of: "grows.bin", under: entry.workDir).first, partial >= size / 24, partial < size {
                            guard let handle = FileHandle(forWritingAtPath: work + "/grows.bin") else { return false }
                            defer { try? handle.close() }
                            _ = try? handle.seekToEnd()
                            try? handle.write(contentsOf: Data("grown".utf8))
                            return true
                        }
                    }
                    return false
                }
                #expect(appended, "no node was seen writing grows.bin")
                _ = try await withTimeout(.seconds(120)) { await scan.exit.value }
                _ = try await withTimeout(.seconds(10)) {
                    await scan.stdoutLines?.closed()
                    await scan.stderrLines?.closed()
                }
                let lines = scan.stdoutLines?.lines ?? [], errors = scan.stderrLines?.lines ?? []
                #expect(await scan.exit.value.status == 0, "\(lines)\n\(errors)")
                let changed = "Re-run task: 0. Failed with: grows.bin changed while it was being sent (size \(size) → \(size + 5))"
                #expect(lines.contains(changed) || errors.contains(changed), "\(lines)\n\(errors)")
                #expect(lines.contains("\(size + 5) grows.bin"), "the second attempt sent the grown file: \(lines)")
            }
        }
    }
}
