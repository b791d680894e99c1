import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension NodeStdioProcessTests {
    /// `skynet node --stdio` started with its stdin or stdout closed has no channel: it says so
    /// and exits 2. (Descriptor 0 or 1 would otherwise go to the runtime's own eventfd or epoll
    /// before main runs, and the node would take it for its channel and exit 0 without a word.) The
    /// harness cannot close a child's descriptor, so a shell does it here, in the test only:
    /// the binary's path is its $0, never part of the script.
    @Test(arguments: ["<&-", ">&-", "<&- >&-"])
    func stdioWithStdinOrStdoutClosedAtStartSaysSoAndExits2(closing: String) async throws {
        let run = try await runProgram("/bin/sh", ["-c", #"exec "$0" node --stdio "# + closing, skynetBinary.path], limit: .seconds(30))
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("error: --stdio needs stdin and stdout open"), "\(run.stderr)")
    }

    /// A closed stderr is no reason to refuse: the node serves, its log going nowhere.
    @Test func stdioWithStderrClosedStillServes() async throws {
        let script = #"printf '%s\n' "$1" | exec "$0" node --stdio 2>&-"#
        let run = try await runProgram("/bin/sh", ["-c", script, skynetBinary.path, Self.hello], limit: .seconds(30))
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix(#"{"type":"welcome""#), "\(run.stdout)")
    }
}
