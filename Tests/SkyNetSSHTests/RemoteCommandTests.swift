import Foundation
@testable import SkyNetCluster
@testable import SkyNetRuntime
@testable import SkyNetSSH
import Testing

struct RemoteCommandTests {
    /// What `/bin/sh -c` makes of `command` with `skynet` standing for `printf '%s\n'`.
    func words(_ command: String) async throws -> [String] {
        let shown = command.replacingOccurrences(of: "exec skynet ", with: "exec printf '%s\\n' ")
        var options = ChildProcess.Options(arguments: ["-c", shown])
        options.stdout = .bytes(limit: 1 << 20)
        let child = try ChildProcess.spawn("/bin/sh", options)
        let exit = try await withTimeout(.seconds(10)) { await child.exit.value }
        #expect(exit.succeeded)
        let bytes = await child.capturedOutput?.stdout?.bytes ?? []
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func thePlainCommandHoldsOnlyFixedTextAndHex() async throws {
        let arguments = ["--job", #"sum=sha256sum '{}' "$(reboot)" `x`; \"#, "--capacity", "3"]
        let command = try RemoteCommand.plain(arguments: arguments)
        #expect(command.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == " " || $0 == "-") })
        let words = try await words(command)
        #expect(words.prefix(3) == ["node", "--stdio", "--stdio-args"])
        let decoded = Secrets.bytes(fromHex: words[3]).map { String(decoding: $0, as: UTF8.self) }
        #expect(decoded?.split(separator: "\0", omittingEmptySubsequences: false).map(String.init) == arguments)
        #expect(try RemoteCommand.plain(arguments: []) == "exec skynet node --stdio")
    }

    @Test func aCommandPastTheBoundIsRefused() {
        #expect(throws: RemoteCommand.TooLong.self) { try RemoteCommand.plain(arguments: [String(repeating: "x", count: 60 * 1024)]) }
    }
}
