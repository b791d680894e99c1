import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// `skynet scan --ssh` and `skynet status` end to end, as a user runs them: the built
    /// `skynet` as coordinator, real `ssh`, real sshd hosts running the built `skynet node
    /// --stdio` (or none, or the one `--ship` brings). Skipped where sshd, ssh or ssh-keygen is missing.
    @Suite(.serialized, .timeLimit(.minutes(3)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct SSHScanTests {
        static let hostWithSkynet = SSHTestHost.Options(skynet: skynetBinary.path)
        static let hostWithoutSkynet = SSHTestHost.Options(skynet: skynetBinary.path, skynetOnPath: false)

        /// `scan --ssh … --job sum='sha256sum {}' --inputs LIST --results --keep-order`: the lines
        /// of `sha256sum`, in input order, over `logins` only (`--local-capacity 0`).
        static func sumScan(_ logins: [String], client: SSHTestClient, list: String, extra: [String] = []) -> [String] {
            ["scan", "--ssh", logins.joined(separator: ","), "--ssh-command", client.commandLine(), "--local-capacity", "0",
             "--job", "sum=sha256sum {}", "--inputs", list, "--results", "--keep-order", "--quiet"] + extra
        }

        @Test func aRealJobOverTwoHostsPrintsWhatSha256sumPrintsHereAndLeavesNothingOnThem() async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                try await SSHScanHarness.withFolder { folder in
                    let (_, files) = try SSHScanHarness.randomFiles(44, in: folder)
                    let gate = try FIFOGate.make(4, in: folder)
                    let list = try SSHScanHarness.lines(gate.paths + files, in: folder)
                    let expected = try await gate.expectedSums(scratch: folder) + SSHScanHarness.localSums(files)
                    let scan = Self.sumScan(hosts.map { "2/" + $0.login }, client: client, list: list)
                    let run = try await withCoordinator(scan) { scan in
                        // 2 slots a host, 4 held inputs first: each host holds 2 of them, whichever logged in first.
                        for host in hosts {
                            let holds = await host.waitUntil(within: .seconds(30)) { gate.held(on: $0, by: "sha256sum").count == 2 }
                            #expect(holds, "\(host.login) holds \(gate.held(on: host, by: "sha256sum")): \(scan.process.errorLines)")
                        }
                        try await gate.release()
                        return try await scan.process.finish(timeout: .seconds(60))
                    }
                    #expect(run.status == 0, "\(run.stderr)")
                    // Byte for byte, in input order: every file hashed once, on a host, whole
                    // (the lines came back without their last newline).
                    #expect(run.stdout + "\n" == expected)
                    let completed = SSHScanHarness.completedBySystem(run.stderr)
                    #expect(Set(completed.keys) == Set(hosts.map(\.login)), "\(run.stderr)")
                    #expect(completed.values.reduce(0, +) == files.count + gate.paths.count, "\(run.stderr)")
                    #expect(completed.values.allSatisfy { $0 >= 2 }, "\(run.stderr)")
                    // The scan is over: each node saw its stdin end, stopped and left nothing
                    // (within the issue's 1 s of its stdin closing, which came before our exit).
                    let left = await processesLeft(on: hosts, within: .seconds(1))
                    #expect(left.isEmpty, "\(left.mapValues(\.described))")
                }
            }
        }

        @Test func aHostWithoutSkynetIsReportedOnceWithTheFixAndTheOtherHostRunsEveryTask() async throws {
            try await withSSHTestHosts(each: [Self.hostWithSkynet, Self.hostWithoutSkynet]) { hosts, client in
                try await SSHScanHarness.withFolder { folder in
                    let (_, files) = try SSHScanHarness.randomFiles(10, in: folder)
                    // Held until the failed login is reported: a scan this short could end before it.
                    let gate = try FIFOGate.make(2, in: folder)
                    let list = try SSHScanHarness.lines(gate.paths + files, in: folder)
                    let expected = try await gate.expectedSums(scratch: folder) + SSHScanHarness.localSums(files)
                    let missing = "[Cluster] Unreachable: \(hosts[1].login) ("
                    let run = try await withCoordinator(Self.sumScan(["2/" + hosts[0].login, hosts[1].login], client: client, list: list)) { scan in
                        try await scan.process.waitForErrorLine { $0.hasPrefix(missing) }
                        try await gate.release()
                        return try await scan.process.finish(timeout: .seconds(60))
                    }
                    #expect(run.status == 0, "\(run.stderr)")
                    #expect(run.stdout + "\n" == expected)
                    #expect(SSHScanHarness.completedBySystem(run.stderr) == [hosts[0].login: files.count + 2], "\(run.stderr)")
                    let unreachable = run.stderr.split(separator: "\n").filter { $0.hasPrefix(missing) }
                    #expect(unreachable.count == 1, "\(run.stderr)")
                    // The login shell's own words (`bash: line 1: exec: skynet: not found`), then the fix.
                    #expect(unreachable.first?.hasSuffix(
                        "skynet: not found) — install skynet on its PATH (swift build -c release --static-swift-stdlib), or give --ship") == true,
                        "\(unreachable)")
                    #expect(!run.stderr.contains("Unreachable: \(hosts[0].login)"), "\(run.stderr)")
                }
            }
        }

        @Test func shipGivesAHostWithoutSkynetThisBuildInItsCacheAndItRunsTheTasks() async throws {
            try await withSSHTestHosts(each: [Self.hostWithoutSkynet]) { hosts, client in
                let host = hosts[0]
                try await SSHScanHarness.withFolder { folder in
                    let (list, files) = try SSHScanHarness.randomFiles(12, in: folder)
                    let expected = try await SSHScanHarness.localSums(files)
                    // The hash sha256sum gives here, not the product's own: the name must be the real one.
                    let build = try await SSHScanHarness.localSums([skynetBinary.resolvingSymlinksInPath().path])
                    let sha256 = String(build.prefix(64))
                    let run = try await runSkynet(Self.sumScan(["2/" + host.login], client: client, list: list, extra: ["--ship"]),
                                                  limit: .seconds(120))
                    #expect(run.status == 0, "\(run.stderr)")
                    #expect(run.stdout == expected)
                    #expect(SSHScanHarness.completedBySystem(run.stderr) == [host.login: files.count], "\(run.stderr)")
                    #expect(!run.stderr.contains("Unreachable"), "\(run.stderr)")
                    let copy = "\(host.home)/.cache/skynet/skynet-\(sha256)"
                    #expect(FileManager.default.isExecutableFile(atPath: copy), "no \(copy): \(run.stderr)")
                    #expect(try await SSHScanHarness.localSums([copy]).prefix(64) == sha256)
                    // Nothing half-written left beside it (the upload goes to a temporary name first).
                    let cache = try FileManager.default.contentsOfDirectory(atPath: "\(host.home)/.cache/skynet")
                    #expect(cache == ["skynet-\(sha256)"])
                    let left = await host.processesLeft(within: .seconds(3))
                    #expect(left.isEmpty, "\(left.described)")
                }
            }
        }

        @Test func aWrongKeyIsReportedPerHostInSSHsWordsAndAnSSHOnlyScanExitsTwoListingEach() async throws {
            try await withSSHTestHosts(count: 2, options: Self.hostWithSkynet) { hosts, client in
                let stranger = try await client.makeKey(named: "stranger_key")
                let command = client.commandLine(key: stranger)
                // Only the hosts may run it (with local slots, a scan this short ends before the logins fail).
                let run = try await runSkynet(["scan", "--ssh", hosts.map(\.login).joined(separator: ","), "--ssh-command", command,
                                               "--local-capacity", "0", "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
                #expect(run.status == 2, "\(run.stdout)\n\(run.stderr)")
                let reason = "ssh: Permission denied (publickey)"
                let unreachable = run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") }
                #expect(Set(unreachable) == Set(hosts.map { host in
                    "[Cluster] Unreachable: \(host.login) (\(reason)) — check the login with: \(command) -p \(host.port) 127.0.0.1 true"
                }), "\(run.lines)")
                #expect(unreachable.count == 2, "\(run.lines)")
                #expect(run.stderr.contains(
                    "error: no ssh host could be used: \(hosts[0].login) (\(reason)), \(hosts[1].login) (\(reason))"), "\(run.stderr)")
                #expect(!run.lines.contains { $0.hasPrefix("Completed:") }, "\(run.lines)")
                for host in hosts { #expect(host.processes().isEmpty) }
            }
        }

        @Test func anUnknownHostKeyIsRefusedInSSHsWordsWhenTheCommandAsksForStrictChecking() async throws {
            try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
                let host = hosts[0]
                let command = client.commandLine(hostKeyChecking: "yes")
                let run = try await runSkynet(["scan", "--ssh", host.login, "--ssh-command", command, "--local-capacity", "0",
                                               "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
                #expect(run.status == 2, "\(run.stdout)\n\(run.stderr)")
                #expect(run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") } == [
                    "[Cluster] Unreachable: \(host.login) (ssh: Host key verification failed) — check the login with: \(command) -p \(host.port) 127.0.0.1 true",
                ], "\(run.lines)")
                #expect(run.stderr.contains("error: no ssh host could be used: \(host.login) (ssh: Host key verification failed)"), "\(run.stderr)")
                // Nothing learnt behind the user's back: the known hosts file stays without the key.
                #expect(((try? String(contentsOfFile: client.knownHosts, encoding: .utf8)) ?? "").isEmpty)
            }
        }

        @Test func shipToAHostOfAnotherPlatformIsRefusedWithItsUnameAndCopiesNothing() async throws {
            // bin/ on the PATH without skynet: a `uname` there speaks for the host.
            var options = SSHTestHost.Options(skynet: nil)
            options.skynetOnPath = true
            try await withSSHTestHosts(each: [options]) { hosts, client in
                let host = hosts[0]
                let here = try await ToolRun.run("uname", ["-sm"])
                let platform = here.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let other = platform.hasSuffix("aarch64") ? "Linux x86_64" : "Linux aarch64"
                _ = try await SSHOptionTests.installScript("#!/bin/sh\necho '\(other)'\n", at: host.folder + "/bin/uname")
                let run = try await runSkynet(["scan", "--ssh", host.login, "--ship", "--ssh-command", client.commandLine(),
                                               "--local-capacity", "0", "--total", "4", "--duration", "0.1", "--quiet"], limit: .seconds(60))
                #expect(run.status == 2, "\(run.stdout)\n\(run.stderr)")
                let reason = "skynet --ship: this host is \(other), not \(platform)"
                #expect(run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") } == [
                    "[Cluster] Unreachable: \(host.login) (\(reason)) — --ship copies this \(platform) build only: build skynet on that host",
                ], "\(run.lines)")
                #expect(run.stderr.contains("error: no ssh host could be used: \(host.login) (\(reason))"), "\(run.stderr)")
                #expect(!FileManager.default.fileExists(atPath: host.home + "/.cache/skynet"))
            }
        }

        /// cluster.json mixing kinds: an ssh host beside a TCP node, each used under the name
        /// the file gives it.
        @Test func aClusterFileMixesAnSSHHostWithATCPNodeUnderTheirOwnNames() async throws {
            try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
                let nodeArguments = ["--job", "sum=sha256sum {}", "--capacity", "2", "--failing-every", "0"]
                try await withCluster(nodes: 1, nodeArguments: nodeArguments) { cluster in
                    let beta = try #require(cluster.node("beta"))
                    let folder = cluster.folder.path
                    let file = folder + "/mixed.json"
                    try """
                        {"nodes": [{"name": "gpu1", "ssh": "2/\(hosts[0].login)"}, {"name": "beta", "host": "127.0.0.1", "port": \(beta.port)}]}
                        """.write(toFile: file, atomically: true, encoding: .utf8)
                    let (_, files) = try SSHScanHarness.randomFiles(12, in: folder)
                    // beta (TCP) is there first and holds 2; gpu1 must take the other 2 held ones.
                    let gate = try FIFOGate.make(4, in: folder)
                    let list = try SSHScanHarness.lines(gate.paths + files, in: folder)
                    let expected = try await gate.expectedSums(scratch: folder) + SSHScanHarness.localSums(files)
                    let arguments = ["scan", "--cluster", file, "--ssh-command", client.commandLine(), "--local-capacity", "0",
                                     "--job", "sum=sha256sum {}", "--inputs", list, "--results", "--keep-order", "--quiet"]
                    let run = try await withCoordinator(arguments) { scan in
                        let holds = await hosts[0].waitUntil(within: .seconds(30)) { gate.held(on: $0, by: "sha256sum").count == 2 }
                        #expect(holds, "gpu1 holds \(gate.held(on: hosts[0], by: "sha256sum")): \(scan.process.errorLines)")
                        try await gate.release()
                        return try await scan.process.finish(timeout: .seconds(60))
                    }
                    #expect(run.status == 0, "\(run.stderr)")
                    #expect(run.stdout + "\n" == expected)
                    #expect(run.stderr.contains("[Cluster] Connected: gpu1\n"), "\(run.stderr)")
                    let completed = SSHScanHarness.completedBySystem(run.stderr)
                    #expect(Set(completed.keys) == ["gpu1", "beta"], "\(run.stderr)")
                    #expect(completed.values.reduce(0, +) == 16 && completed.values.allSatisfy { $0 >= 2 }, "\(run.stderr)")
                    let left = await hosts[0].processesLeft(within: .seconds(3))
                    #expect(left.isEmpty, "\(left.described)")
                }
            }
        }

        @Test func statusOverSSHSaysUpWithTheLoginsSlotsAndDownInSSHsWordsAndExitsOne() async throws {
            try await withSSHTestHosts(count: 1, options: Self.hostWithSkynet) { hosts, client in
                let host = hosts[0]
                try await SSHScanHarness.withFolder { folder in
                    let closed = try SSHLinkTests.closedLogin()
                    let closedPort = closed.split(separator: ":").last.map(String.init) ?? "?"
                    let cluster = folder + "/cluster.json"
                    try """
                        {"nodes": [{"name": "h1", "ssh": "3/\(host.login)"}, {"name": "h2", "ssh": "\(closed)"}]}
                        """.write(toFile: cluster, atomically: true, encoding: .utf8)
                    let arguments = ["status", "--cluster", cluster, "--ssh-command", client.commandLine(), "--timeout", "10"]
                    let table = try await runSkynet(arguments, limit: .seconds(60))
                    #expect(table.status == 1, "\(table.stdout)\n\(table.stderr)")
                    let rows = table.lines.map { $0.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) } }
                    #expect(rows.first == ["name", "address", "state", "running", "completed", "round trip", "link"], "\(table.stdout)")
                    let up = rows.first { $0.first == "h1" } ?? []
                    // 3/ reached the node as its slots; nothing ran yet.
                    #expect(up.prefix(5) == ["h1", "ssh \(host.login)", "up", "0/3", "0"], "\(table.stdout)")
                    #expect(up.count == 7 && up[5].hasSuffix(" ms") && up[6] == "ssh", "ssh keeps the link secret: \(table.stdout)")
                    let down = rows.first { $0.first == "h2" } ?? []
                    #expect(down == ["h2", "ssh \(closed)", "down (ssh: connect to host 127.0.0.1 port \(closedPort): Connection refused)", "-", "-", "-", "-"],
                            "\(table.stdout)")

                    let json = try await runSkynet(arguments + ["--json"], limit: .seconds(60))
                    #expect(json.status == 1, "\(json.stderr)")
                    let nodes = try SSHScanHarness.events(json.stdout)
                    #expect(nodes.count == 2, "\(json.stdout)")
                    #expect(nodes.first?["up"]?.bool == true && nodes.first?["capacity"]?.int == 3, "\(json.stdout)")
                    #expect(nodes.first?["link"]?.string == "ssh", "\(json.stdout)")
                    #expect(nodes.last?["up"]?.bool == false, "\(json.stdout)")
                    #expect(nodes.last?["reason"]?.string == "ssh: connect to host 127.0.0.1 port \(closedPort): Connection refused", "\(json.stdout)")
                    // Each probe's node saw its stdin end and left.
                    let left = await host.processesLeft(within: .seconds(3))
                    #expect(left.isEmpty, "\(left.described)")
                }
            }
        }
    }
}
