import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

/// What a host's login prints around the node: its stderr, a flood of it, and text on stdout
/// (where only the protocol may go).
extension ProcessTests.SSHScanTests {
    /// What a host writes to stderr (here its login shell, before the node starts) comes
    /// back once, each line prefixed with the host's name; stdout keeps only the results.
    @Test func aHostsStderrComesBackOncePrefixedWithItsName() async throws {
        try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
            let host = hosts[0]
            let notice = "echo 'maintenance at 5' >&2; echo 'disk 91% full' >&2\n"
            try notice.write(toFile: host.home + "/.bashrc", atomically: true, encoding: .utf8)
            try notice.write(toFile: host.home + "/.profile", atomically: true, encoding: .utf8)
            let login = try await client.run(on: host, "true")
            try #require(login.stderr.contains("maintenance at 5"), "the login shell read neither file: \(login.stderr)")
            try await SSHScanHarness.withFolder { folder in
                let (list, files) = try SSHScanHarness.randomFiles(6, in: folder)
                let expected = try await SSHScanHarness.localSums(files)
                let run = try await runSkynet(Self.sumScan([host.login], client: client, list: list), limit: .seconds(60))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout == expected)
                let lines = run.stderr.split(separator: "\n").map(String.init)
                #expect(lines.filter { $0 == "[\(host.login)] maintenance at 5" }.count == 1, "\(run.stderr)")
                #expect(lines.filter { $0 == "[\(host.login)] disk 91% full" }.count == 1, "\(run.stderr)")
                #expect(!run.stderr.contains("Unreachable"), "\(run.stderr)")
            }
        }
    }

    /// A host whose stderr floods (a background job of its login shell, 3000 lines at once)
    /// is held to its burst and 20 lines a second; the rest is counted, not printed.
    @Test func aChattyHostIsHeldToABurstAndTwentyLinesASecondWithTheDropCounted() async throws {
        try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
            let host = hosts[0]
            let chatter = "( sleep 0.5; i=0; while [ $i -lt 3000 ]; do echo \"chatter $i\" >&2; i=$((i+1)); done ) &\n"
            try chatter.write(toFile: host.home + "/.bashrc", atomically: true, encoding: .utf8)
            try chatter.write(toFile: host.home + "/.profile", atomically: true, encoding: .utf8)
            let login = try await client.run(on: host, "true")
            try #require(login.stderr.contains("chatter 2999"), "the login shell read neither file: \(login.stderr.prefix(200))")
            try await SSHScanHarness.withFolder { folder in
                let list = try SSHScanHarness.lines(Array(repeating: "0.2", count: 30), in: folder)
                let started = ContinuousClock.now
                let run = try await runSkynet(["scan", "--ssh", "2/" + host.login, "--ssh-command", client.commandLine(), "--local-capacity", "0",
                                               "--job", "nap=sleep {}", "--inputs", list, "--quiet"], limit: .seconds(60))
                let seconds = (ContinuousClock.now - started).seconds
                #expect(run.status == 0, "\(run.stderr.suffix(2000))")
                let lines = run.stderr.split(separator: "\n").map(String.init)
                let printed = lines.filter { $0.hasPrefix("[\(host.login)] chatter ") }.count
                #expect(printed >= 20 && Double(printed) <= 200 + 20 * (seconds + 1), "\(printed) lines in \(seconds) s")
                let suffix = " log lines dropped (at most 20 a second per host)"
                let dropped = lines.compactMap { line -> Int? in
                    guard line.hasPrefix("[\(host.login)] "), line.hasSuffix(suffix) else { return nil }
                    return Int(line.dropFirst(host.login.count + 3).dropLast(suffix.count))
                }.reduce(0, +)
                #expect(printed + dropped == 3000, "printed \(printed), dropped \(dropped)")
                let left = await host.processesLeft(within: .seconds(3))
                #expect(left.isEmpty, "\(left.described)")
            }
        }
    }

    /// A login that prints to stdout (a `.bashrc` that greets, as many do) puts text before
    /// the node's first line on the channel.
    /// (It was read as protocol: `Unreachable: H at ssh H (bad-request: not valid JSON: …)`,
    /// the TCP form without a fix, and status said `down (bad-request)`.)
    @Test func aLoginThatGreetsOnStdoutIsReportedInTheSSHFormWithWhatItPrinted() async throws {
        try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
            let host = hosts[0]
            try "echo 'Welcome to the lab'\n".write(toFile: host.home + "/.bashrc", atomically: true, encoding: .utf8)
            try "echo 'Welcome to the lab'\n".write(toFile: host.home + "/.profile", atomically: true, encoding: .utf8)
            let greeting = try await client.run(on: host, "true")
            try #require(greeting.stdout == "Welcome to the lab\n", "the login shell read neither file: \(greeting.stdout)")
            let run = try await runSkynet(["scan", "--ssh", host.login, "--ssh-command", client.commandLine(), "--local-capacity", "0",
                                           "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
            let unreachable = run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") }
            #expect(unreachable.count == 1, "\(run.lines)")
            let line = unreachable.first ?? ""
            #expect(line.hasPrefix("[Cluster] Unreachable: \(host.login) ("), "\(line)")
            #expect(!line.contains(" at ssh ") && !line.contains("bad-request"), "\(line)")
            #expect(line.contains("Welcome to the lab"), "\(line)")
            #expect(line.contains("— make the shell's start-up files"), "\(line)")
            #expect(line.hasSuffix("check the login with: \(client.commandLine()) -p \(host.port) \(host.address) true"), "\(line)")
            try await SSHScanHarness.withFolder { folder in
                let cluster = folder + "/cluster.json"
                try #"{"nodes": [{"name": "h1", "ssh": "\#(host.login)"}]}"#.write(toFile: cluster, atomically: true, encoding: .utf8)
                let status = try await runSkynet(["status", "--cluster", cluster, "--ssh-command", client.commandLine(), "--timeout", "10"],
                                                 limit: .seconds(60))
                #expect(status.status == 1)
                #expect(status.stdout.contains(#"down (the login printed "Welcome to the lab" on stdout before skynet started)"#),
                        "\(status.stdout)")
            }
        }
    }
}
