import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
@testable import SkyNetTestSupport
import Testing

extension ProcessTests.SystemdUnitTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// Whether `skynet node --help` names every option of the unit's ExecStart (a `skynet` without `--metrics` or
    /// `--drain-timeout` cannot run it).
    static func nodeKnowsEveryOptionOfExecStart() async throws -> Bool {
        let options = try execStartArguments().filter { $0.hasPrefix("--") }
        let help = try await ToolRun.run(skynetBinary.path, ["node", "--help"]).stdout
        return options.allSatisfy { help.contains($0 + " ") }
    }

    /// A credential as systemd gives it on tmpfs: 0400 plus an ACL entry for the service's user,
    /// whose mask `stat` shows as group read (0440). Only in `$CREDENTIALS_DIRECTORY` is that
    /// bit taken for what it is; anywhere else, and with any other bit, the token is refused.
    @Test func aCredentialWithSystemdsACLMaskIsTakenInTheCredentialsDirectoryOnly() async throws {
        let scratch = try TokenScratch()
        let token = try scratch.tokenFile(Self.token + "\n", mode: 0o440)
        let elsewhere = try await runSkynet(["node", "--port", "0", "--token-file", token], limit: .seconds(20),
                                            environment: ["CREDENTIALS_DIRECTORY": nil])
        #expect(elsewhere.status == 2)
        #expect(elsewhere.stderr.contains("refusing --token-file \(token): its group or others have access to it (mode 440)"))
        let readable = try scratch.tokenFile(Self.token, named: "readable", mode: 0o444)
        let open = try await runSkynet(["node", "--port", "0", "--token-file", readable], limit: .seconds(20),
                                       environment: ["CREDENTIALS_DIRECTORY": scratch.folder.path])
        #expect(open.status == 2)
        #expect(open.stderr.contains("mode 444"))

        let node = try RunningProcess(["node", "--port", "0", "--token-file", token],
                                      environment: ["CREDENTIALS_DIRECTORY": scratch.folder.path + "/"])
        defer { node.kill() }
        try await node.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
        node.send(SIGTERM)
        #expect(try await node.finish(timeout: .seconds(30)).status == 0)
    }

    /// The credentials directory's exception holds for a file that really is in it: a link
    /// there to a 0440 file elsewhere is refused as the file named directly is; a link to the
    /// directory itself reaches a real credential and is taken.
    @Test func aLinkInTheCredentialsDirectoryToAFileElsewhereIsNoCredential() async throws {
        let scratch = try TokenScratch()
        let elsewhere = try scratch.tokenFile(Self.token + "\n", named: "elsewhere-token", mode: 0o440)
        let credentials = scratch.path("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: credentials + "/link", withDestinationPath: elsewhere)
        let linked = try await runSkynet(["node", "--port", "0", "--token-file", credentials + "/link"], limit: .seconds(20),
                                         environment: ["CREDENTIALS_DIRECTORY": credentials])
        #expect(linked.status == 2)
        #expect(linked.stderr.contains("refusing --token-file \(credentials)/link: its group or others have access to it (mode 440)"),
                "\(linked.stderr)")

        _ = try scratch.tokenFile(Self.token + "\n", named: "credentials/token", mode: 0o440)
        try FileManager.default.createSymbolicLink(atPath: scratch.path("alias"), withDestinationPath: credentials)
        let node = try RunningProcess(["node", "--port", "0", "--token-file", scratch.path("alias") + "/token"],
                                      environment: ["CREDENTIALS_DIRECTORY": credentials])
        defer { node.kill() }
        try await node.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
        node.send(SIGTERM)
        #expect(try await node.finish(timeout: .seconds(30)).status == 0)
    }

    /// The ExecStart line as systemd would run it (its address and ports made loopback and
    /// free): the credential read from `%d`, ready told, and a SIGTERM that stops it in order.
    @Test(.enabled("needs every option of ExecStart (--metrics, --drain-timeout)") { try await nodeKnowsEveryOptionOfExecStart() })
    func theUnitsExecStartServesAsSystemdWouldStartIt() async throws {
        let scratch = try TokenScratch()
        _ = try scratch.tokenFile(Self.token, mode: 0o440)
        var arguments = try Self.execStartArguments().map { $0.replacingOccurrences(of: "%d", with: scratch.folder.path) }
        for (option, value) in [("--host", "127.0.0.1"), ("--port", "0"), ("--metrics", "127.0.0.1:0")] {
            if let index = arguments.firstIndex(of: option), index + 1 < arguments.count { arguments[index + 1] = value }
        }
        let socket = try NotifySocket(abstract: true)
        let node: RunningProcess
        do {
            node = try RunningProcess(arguments, environment: [
                "NOTIFY_SOCKET": socket.address, "CREDENTIALS_DIRECTORY": scratch.folder.path, "WATCHDOG_USEC": "30000000"])
        } catch {
            await socket.close()
            throw error
        }
        do {
            try await node.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("listening on ") }
            #expect(await socket.wait { $0.hasPrefix("READY=1\nSTATUS=accepting: 0/4 running") }, "\(socket.datagrams)")
            node.send(SIGTERM)
            #expect(await socket.wait { $0.hasPrefix("STOPPING=1") }, "\(socket.datagrams)")
            let finished = try await node.finish(timeout: .seconds(45))
            #expect(finished.status == 0, "\(finished.stderr)")
        } catch {
            node.kill()
            await socket.close()
            throw error
        }
        node.kill()
        await socket.close()
    }
}
