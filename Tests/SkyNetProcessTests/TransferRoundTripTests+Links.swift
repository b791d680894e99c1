import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension ProcessTests.TransferRoundTripTests {
    /// Symbolic links here are never followed: an input reached through one is not sent, and a
    /// returned file whose place here passes through one is not written (whatever the node
    /// sent); both are given up at once, said clearly, and nothing appears behind the link.
    @Test func anInputOrAReturnThroughASymbolicLinkHereIsRefusedAndNothingIsWrittenThroughIt() async throws {
        try await TransferHarness.withFolder { folder in
            let work = try TransferHarness.makeFolder(folder + "/work")
            let nodes = try TransferHarness.makeFolder(folder + "/nodes")
            try TransferHarness.makeFolder(work + "/target")
            try RandomFiles.write(work + "/real/a.bin", size: 100, seed: 11)
            try FileManager.default.createSymbolicLink(atPath: work + "/via", withDestinationPath: "real")
            try FileManager.default.createSymbolicLink(atPath: work + "/linked", withDestinationPath: "target")
            let scratch = try TokenScratch()
            let token = try TransferHarness.tokenFile(scratch)
            let before = RandomFiles.tree(work)
            let common = ["scan", "--spawn", "1", "--token-file", token, "--local-capacity", "0", "--failing-every", "0",
                          "--max-attempts", "3"]

            // The lists sit outside `work`, whose tree must not change; their lines are relative to it.
            let throughLink = try TransferHarness.writeList(["via/a.bin"], at: folder + "/through-link.txt")
            let input = try await TransferHarness.run(
                in: work, common + ["--inputs", throughLink, "--job", "t=cp {} {}.out", "--trc", "{}.out"],
                environment: ["TMPDIR": nodes], limit: .seconds(60))
            #expect(input.status == 1, "\(input.stdout)\n\(input.stderr)")
            #expect(input.lines.contains(
                "Gave up on task 0 after 1 attempts: cannot send via/a.bin: it passes through a symbolic link (via); give its real path (realpath)"),
                "\(input.stdout)")

            // The node makes linked/a.bin.out in its own directory; here `linked` is a link.
            let real = try TransferHarness.writeList(["real/a.bin"], at: folder + "/real.txt")
            let returned = try await TransferHarness.run(
                in: work, common + ["--inputs", real, "--job", "t=install -D -m 644 {} linked/{/}.out", "--transfer",
                                    "--return", "linked/{/}.out", "--cleanup"],
                environment: ["TMPDIR": nodes], limit: .seconds(60))
            #expect(returned.status == 1, "\(returned.stdout)\n\(returned.stderr)")
            #expect(returned.lines.contains(
                "Gave up on task 0 after 1 attempts: linked/a.bin.out cannot be written here: linked is a symbolic link or not a directory (never followed)"),
                "\(returned.stdout)")
            #expect(returned.reruns.isEmpty, "\(returned.stdout)")
            #expect(RandomFiles.tree(work) == before, "written here: \(RandomFiles.tree(work).subtracting(before).sorted())")
        }
    }
}
