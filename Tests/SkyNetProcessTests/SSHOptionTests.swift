import Foundation
@testable import SkyNet
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// `scan --ssh`, `--ssh-file`, `--ssh-command` and `--ship` as a user types them: usage
    /// errors, and hosts that all refuse the login (a fake `ssh` that says what OpenSSH says).
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct SSHOptionTests {
        @Test(arguments: [
            (["--ssh", ""], "option '--ssh' wants [N/][USER@]HOST[:PORT], or several joined by commas"),
            (["--ssh", "0/h1"], "ssh login '0/h1': 0 slots is outside 1...1024"),
            (["--ssh", "h1,h1"], "the ssh host h1 is given twice"),
            (["--ssh", "h1", "--ssh", "2/h1"], "the ssh host h1 is given twice"),
            (["--ssh", "H1,h1:22"], "the ssh host h1:22 is given twice (as H1 and h1:22)"),
            (["--ship"], "--ship is for ssh hosts: give --ssh, --ssh-file or a cluster file with \"ssh\" nodes"),
            (["--ssh-command", "ssh -i k"], "--ssh-command is for ssh hosts"),
            (["--ssh", "h1", "--ssh-command", "''"], "--ssh-command: the ssh command is empty"),
            (["--ssh", "h1", "--ssh-command", "ssh 'unclosed"], "--ssh-command: "),
            (["--ssh", "h1", "--ssh-command", "ssh -o SendEnv=LC_*"],
             "--ssh-command: '*' means something only to a shell, and the ssh command is never run by one: quote it ('*')"),
            (["--ssh", "h1", "--job", "sum"], "the ssh hosts run the jobs this scan declares: give --job sum=COMMAND"),
            (["--ssh-file", "no-such-file"], "ssh login file no-such-file does not exist"),
        ])
        func badSSHUsageExitsWithStatusTwoAndSaysWhatIsWrong(arguments: [String], message: String) async throws {
            let run = try await runSkynet(["scan"] + arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: \(message)"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }

        /// Every host of `--ssh-file` (comments and blank lines skipped) and `--ssh` refuses the
        /// login: each is reported once with ssh's own line and the command to check it, the
        /// host's stderr is not printed a second time, and the scan stops with exit 2 and the list.
        @Test func everyHostRefusingTheLoginEndsTheScanWithStatusTwoAndEachReason() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ssh-options-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = try await Self.installScript(
                """
                #!/bin/sh
                while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
                printf 'root@%s: Permission denied (publickey).\\r\\n' "$2" >&2
                exit 255
                """, at: folder + "/ssh")
            let hosts = folder + "/hosts"
            try "# the lab\n\n  2/h1  \n# alice's\nalice@h2:2222\n".write(toFile: hosts, atomically: true, encoding: .utf8)
            let run = try await runSkynet(["scan", "--ssh-file", hosts, "--ssh", "h3", "--ssh-command", fake,
                                           "--total", "50", "--duration", "0.5", "--quiet"])
            #expect(run.status == 2, "\(run.stdout)\n\(run.stderr)")
            let reason = "ssh: Permission denied (publickey)"
            let unreachable = run.lines.filter { $0.hasPrefix("[Cluster] Unreachable: ") }
            #expect(Set(unreachable) == [
                "[Cluster] Unreachable: h1 (\(reason)) — check the login with: \(fake) h1 true",
                "[Cluster] Unreachable: alice@h2:2222 (\(reason)) — check the login with: \(fake) -p 2222 alice@h2 true",
                "[Cluster] Unreachable: h3 (\(reason)) — check the login with: \(fake) h3 true",
            ], "\(run.lines)")
            #expect(unreachable.count == 3)
            #expect(!run.stderr.contains("root@"), "\(run.stderr)")  // no host line "[h1] root@h1: …"
            // --ssh hosts first, then those of --ssh-file.
            #expect(run.stderr.contains("error: no ssh host could be used: h3 (\(reason)), h1 (\(reason)), alice@h2:2222 (\(reason))"),
                    "\(run.stderr)")
            #expect(run.lines.contains { $0.hasPrefix("Stopped: ") }, "\(run.lines)")
        }

        /// A token file given to --ssh-file by mistake: refused before any ssh starts (the fake
        /// ssh would leave a mark), and no 9 characters of the token are printed.
        @Test func aTokenFileGivenAsLoginsIsRefusedBeforeAnySSHAndNotEchoed() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ssh-token-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = try await Self.installScript("#!/bin/sh\ntouch \"\(folder)/ran\"\nexit 255\n", at: folder + "/ssh")
            let token = Secrets.hex(Secrets.randomBytes(32))
            try (token + "\n").write(toFile: folder + "/token", atomically: true, encoding: .utf8)
            let run = try await runSkynet(["scan", "--ssh-file", folder + "/token", "--ssh-command", fake, "--total", "3"])
            #expect(run.status == 2)
            #expect(run.stderr.contains("error: \(folder)/token:1: ssh login '\(token.prefix(8))…' (64 characters): "), "\(run.stderr)")
            let printed = run.stdout + run.stderr
            #expect(!(0...(token.count - 9)).contains { printed.contains(token.dropFirst($0).prefix(9)) })
            #expect(!FileManager.default.fileExists(atPath: folder + "/ran"))
        }

        /// Writes `text` as an executable at `path` through `cp`: this process never holds the
        /// file open for writing, which a child spawned meanwhile would inherit until its exec,
        /// making an exec of the file fail (ETXTBSY).
        static func installScript(_ text: String, at path: String) async throws -> String {
            let source = path + ".txt"
            try text.write(toFile: source, atomically: true, encoding: .utf8)
            var options = ChildProcess.Options(arguments: [source, path])
            options.searchPath = true
            let copy = try await ChildProcess.spawn("cp", options).exit.value
            guard copy.reason == .exited(0), chmod(path, 0o755) == 0 else { throw ChildProcessError("cp \(source)", code: EIO) }
            return path
        }
    }
}
