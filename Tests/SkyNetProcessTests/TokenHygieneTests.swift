import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

/// Token hygiene with the real binary: `--token-file` on node, scan and status, the
/// refusals of a file others can read or that is no file, the 16-byte minimum, and the token
/// never in a log, an argument list or a job's environment.
extension ProcessTests {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct TokenHygieneTests {
        /// Where the token comes from, for the tests that run with either.
        enum Source: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case file, environment
            var testDescription: String { rawValue }
        }

        @Test func aTokenFileOfModeSixHundredServesNodeScanAndStatus() async throws {
            let scratch = try TokenScratch()
            let tokenFile = try scratch.tokenFile(TokenScratch.randomToken())
            let node = try await SkynetNode.start(name: "beta", ["--token-file", tokenFile, "--failing-every", "0"])
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let status = try await runSkynet(["status", "--cluster", cluster, "--token-file", tokenFile, "--json"],
                                             limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
            #expect(status.status == 0, "\(status.stdout)\n\(status.stderr)")
            #expect(status.stdout.contains(#""name":"beta""#) && status.stdout.contains(#""up":true"#), "\(status.stdout)")
            let scan = try await runSkynet(["scan", "--cluster", cluster, "--token-file", tokenFile, "--total", "6",
                                            "--duration", "0", "--local-capacity", "0", "--quiet"],
                                           limit: .seconds(30), environment: ["SKYNET_TOKEN": nil])
            #expect(scan.status == 0, "\(scan.stdout)\n\(scan.stderr)")
            #expect(scan.completions.map(\.input).sorted() == Array(0..<6))
            #expect(scan.completions.allSatisfy { $0.system == "beta" })
            let log = try await node.stop()
            let connected = log.stderr.split(separator: "\n").filter { $0.hasPrefix("[Node] Connected: coordinator from 127.0.0.1:") }
            #expect(!connected.isEmpty && connected.allSatisfy { $0.hasSuffix(" (encrypted)") }, "the scan came over an encrypted link: \(log.stderr)")
        }

        /// `scan --spawn 2 --token-file F`: each spawned node is given `--token-file F` (an
        /// absolute path), never the token, in its arguments or its environment; and they prove
        /// it, since every task runs on them.
        @Test func spawnedNodesAreGivenTheTokenFileNeverTheToken() async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let tokenFile = try scratch.tokenFile(token)
            let scan = try RunningProcess(["scan", "--spawn", "2", "--token-file", tokenFile, "--local-capacity", "0",
                                           "--capacity", "1", "--total", "8", "--duration", "0.5", "--failing-every", "0",
                                           "--quiet"])
            try await scan.waitForLines(2, where: { $0.hasPrefix("[Cluster] Connected: node") })
            let nodes = ProcInfo.children(of: scan.pid).filter { ProcInfo.commandLine(of: $0).dropFirst().first == "node" }
            #expect(nodes.count == 2, "spawned nodes: \(nodes.map(ProcInfo.commandLine(of:)))")
            for pid in nodes {
                let arguments = ProcInfo.commandLine(of: pid)
                let given = arguments.firstIndex(of: "--token-file").flatMap { arguments.dropFirst($0 + 1).first }
                #expect(given == tokenFile, "\(arguments)")
                #expect(!TokenScratch.leaks(token, into: arguments.joined(separator: "\0")), "\(arguments)")
                #expect(!TokenScratch.leaks(token, into: ProcInfo.environment(of: pid)))
            }
            #expect(!TokenScratch.leaks(token, into: ProcInfo.commandLine(of: scan.pid).joined(separator: "\0")))
            let run = try await scan.finish(timeout: .seconds(60))
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.completions.map(\.input).sorted() == Array(0..<8))
            #expect(run.completions.allSatisfy { $0.system == "node1" || $0.system == "node2" })
            #expect(!TokenScratch.leaks(token, into: run.stdout + run.stderr))
        }

        @Test(arguments: [0o640, 0o644, 0o604, 0o660])
        func aTokenFileItsGroupOrOthersCanReadIsRefusedWithTheChmodHint(mode: Int) async throws {
            let scratch = try TokenScratch()
            let tokenFile = try scratch.tokenFile(TokenScratch.randomToken(), mode: mode_t(mode))
            let expected = "refusing --token-file \(tokenFile): its group or others have access to it (mode \(String(mode, radix: 8))); "
                + "run: chmod 600 \(tokenFile)"
            for command in try scratch.commands(tokenFile: tokenFile) {
                let run = try await runSkynet(command, limit: .seconds(20), environment: ["SKYNET_TOKEN": nil])
                #expect(run.status == 2, "\(command): \(run.stderr)")
                #expect(run.stderr.contains(expected), "\(command): \(run.stderr)")
            }
        }

        /// Each is a clear error, exit 2, at once: a FIFO with no writer must not hang the open.
        @Test func aMissingFileADirectoryAnEmptyFileAndAFIFOAreEachAClearError() async throws {
            let scratch = try TokenScratch()
            let missing = scratch.path("no-such-token")
            let folder = scratch.path("a-folder")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            let empty = try scratch.tokenFile("", named: "empty")
            let fifo = scratch.path("fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let cases = [
                (missing, "cannot read --token-file \(missing): No such file or directory"),
                (folder, "--token-file \(folder) is not a regular file"),
                (empty, "--token-file \(empty) is empty (make one with: openssl rand -hex 32)"),
                (fifo, "--token-file \(fifo) is not a regular file"),
            ]
            for (path, message) in cases {
                for command in try scratch.commands(tokenFile: path) {
                    let run = try await runSkynet(command, limit: .seconds(10), environment: ["SKYNET_TOKEN": nil])
                    #expect(run.status == 2, "\(command): \(run.stderr)")
                    #expect(run.stderr.contains("error: " + message), "\(command): \(run.stderr)")
                }
            }
        }

        /// 15 bytes is refused, naming the length and the minimum, from the environment or a file
        /// (whose newline is not counted); 16 bytes is enough.
        @Test func aTokenUnderSixteenBytesIsRefusedNamingItsLength() async throws {
            let scratch = try TokenScratch()
            let short = String(TokenScratch.randomToken().prefix(15))
            let minimum = "a token must be at least 16 bytes, so that it cannot be guessed (make one with: openssl rand -hex 32)"
            let shortFile = try scratch.tokenFile(short + "\n", named: "short")
            for command in try scratch.commands(tokenFile: shortFile) {
                let run = try await runSkynet(command, limit: .seconds(10), environment: ["SKYNET_TOKEN": nil])
                #expect(run.status == 2, "\(command): \(run.stderr)")
                #expect(run.stderr.contains("error: the token in \(shortFile) is 15 bytes long: \(minimum)"), "\(command): \(run.stderr)")
            }
            // Counted in bytes, not characters: 5 × "é" is 10 bytes.
            for (value, bytes) in [(short, 15), (String(repeating: "é", count: 5), 10)] {
                for command in try scratch.commands(tokenFile: nil) {
                    let run = try await runSkynet(command, limit: .seconds(10), environment: ["SKYNET_TOKEN": value])
                    #expect(run.status == 2, "\(command): \(run.stderr)")
                    #expect(run.stderr.contains("error: SKYNET_TOKEN is \(bytes) bytes long: \(minimum)"), "\(command): \(run.stderr)")
                }
            }
            let sixteen = String(TokenScratch.randomToken().prefix(16))
            let node = try await SkynetNode.start(name: "beta", ["--failing-every", "0"], environment: ["SKYNET_TOKEN": sixteen])
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let status = try await runSkynet(["status", "--cluster", cluster], limit: .seconds(20), environment: ["SKYNET_TOKEN": sixteen])
            #expect(status.status == 0, "\(status.stdout)\n\(status.stderr)")
            _ = try await node.stop()
        }

        /// A token that only looks like the others' is refused: set but empty (`$(cat missing)`),
        /// a control character (a tab, a second line), an invisible one (a byte order mark, a
        /// zero-width space), a space at either end.
        @Test func anEmptyTokenOrOneWithStrayCharactersIsRefused() async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let cases: [(value: String, says: String)] = [
                ("", "SKYNET_TOKEN is set but empty: give it the cluster's token, or unset it to run without one"),
                (token + "\tmore", "SKYNET_TOKEN holds a control character"),
                (token + "\nsecond-line", "SKYNET_TOKEN holds a control character"),
                ("\u{FEFF}" + token, "SKYNET_TOKEN holds an invisible character (U+FEFF, a byte order mark)"),
                (token + "\u{200B}", "SKYNET_TOKEN holds an invisible character (U+200B)"),
                (token + " ", "SKYNET_TOKEN begins or ends with a space"),
                ("  " + token, "SKYNET_TOKEN begins or ends with a space"),
            ]
            for (value, says) in cases {
                for command in try scratch.commands(tokenFile: nil) {
                    let run = try await runSkynet(command, limit: .seconds(10), environment: ["SKYNET_TOKEN": value])
                    #expect(run.status == 2, "\(command) \(value.debugDescription): \(run.stderr)")
                    #expect(run.stderr.contains("error: \(says)"), "\(command) \(value.debugDescription): \(run.stderr)")
                }
            }
            // From a file, the same: a second line is not dropped like the final newline is.
            let twoLines = try scratch.tokenFile(token + "\nsecond-line\n", named: "two-lines")
            for command in try scratch.commands(tokenFile: twoLines) {
                let run = try await runSkynet(command, limit: .seconds(10), environment: ["SKYNET_TOKEN": nil])
                #expect(run.status == 2, "\(command): \(run.stderr)")
                #expect(run.stderr.contains("error: the token in \(twoLines) holds a control character"), "\(command): \(run.stderr)")
            }
        }

        /// The file's final newline (or CR LF) is not part of the token: a node reading the file
        /// and a coordinator given the bare token in SKYNET_TOKEN prove it to each other.
        @Test(arguments: ["\n", "\r\n"])
        func aTokenFileWithATrailingNewlineHoldsTheSameTokenAsTheEnvironment(ending: String) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let tokenFile = try scratch.tokenFile(token + ending)
            let node = try await SkynetNode.start(name: "beta", ["--token-file", tokenFile, "--failing-every", "0"])
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let scan = try await runSkynet(["scan", "--cluster", cluster, "--total", "4", "--duration", "0", "--local-capacity", "0",
                                            "--quiet"], limit: .seconds(30), environment: ["SKYNET_TOKEN": token])
            #expect(scan.status == 0, "\(scan.stdout)\n\(scan.stderr)")
            #expect(scan.completions.filter { $0.system == "beta" }.count == 4)
            #expect(!scan.stdout.contains("Refused") && !scan.stdout.contains("Unauthorized"), "\(scan.stdout)")
            _ = try await node.stop()
        }

        /// A verbose node running a job and a coordinator, the token from a file or from
        /// SKYNET_TOKEN: no 8-byte piece of it in what either prints or in either's argument list.
        @Test(arguments: Source.allCases)
        func theTokenIsInNoLogAndNoArgumentList(source: Source) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let (given, environment) = try scratch.give(token, by: source)
            let node = try await SkynetNode.start(
                name: "beta", ["--verbose", "--failing-every", "0", "--job", "echo=printf %s {}"] + given, environment: environment)
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let scan = try RunningProcess(["scan", "--cluster", cluster, "--local-capacity", "0", "--capacity", "1", "--total", "4",
                                           "--duration", "0.3", "--failing-every", "0", "--quiet"] + given, environment: environment)
            try await scan.waitForLine { $0.hasPrefix("[Cluster] Connected: beta") }
            for pid in [node.pid, scan.pid] {
                let arguments = ProcInfo.commandLine(of: pid)
                #expect(!arguments.isEmpty && !TokenScratch.leaks(token, into: arguments.joined(separator: "\0")), "\(arguments)")
            }
            let run = try await scan.finish()
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.completions.filter { $0.system == "beta" }.count == 4)
            let job = try await runSkynet(["scan", "--cluster", cluster, "--local-capacity", "0", "--job", "echo", "--total", "3",
                                           "--results", "--quiet"] + given, limit: .seconds(30), environment: environment)
            #expect(job.status == 0, "\(job.stderr)")
            #expect(job.lines.sorted() == ["0", "1", "2"])
            let log = try await node.stop()
            #expect(log.stderr.contains("[Node] Task 2 (echo) from coordinator: completed in "), "the node logged each task: \(log.stderr)")
            for (what, text) in [("node", log.stdout + log.stderr), ("scan", run.stdout + run.stderr), ("job scan", job.stdout + job.stderr)] {
                #expect(!TokenScratch.leaks(token, into: text), "the \(what) printed a piece of the token")
            }
        }

        /// `env` as a command job prints the environment it was given: on a node of our own, on a
        /// node the scan spawns and on the coordinator's own system, no SKYNET_TOKEN and no piece of
        /// the token, even when the token came from SKYNET_TOKEN.
        @Test(arguments: Source.allCases)
        func aCommandJobSeesNoTokenInItsEnvironment(source: Source) async throws {
            let scratch = try TokenScratch()
            let token = TokenScratch.randomToken()
            let (given, environment) = try scratch.give(token, by: source)
            let printEnvironment = "env=env SKYNET_SEEN={}"
            let node = try await SkynetNode.start(name: "beta", ["--job", printEnvironment] + given, environment: environment)
            let cluster = try scratch.clusterFile([("beta", node.port)])
            let runs: [(where: String, arguments: [String])] = [
                ("beta", ["--cluster", cluster, "--local-capacity", "0", "--job", "env"]),
                ("node1", ["--spawn", "1", "--local-capacity", "0", "--job", printEnvironment]),
                ("local", ["--job", printEnvironment]),
            ]
            for (system, arguments) in runs {
                let run = try await runSkynet(["scan", "--total", "3", "--results", "--quiet"] + arguments + given,
                                              limit: .seconds(30), environment: environment)
                #expect(run.status == 0, "\(system): \(run.stderr)")
                let completedBy = run.stderr.split(separator: "\n").filter { $0.hasPrefix("Completed: ") }
                #expect(completedBy.count == 3 && completedBy.allSatisfy { system == "local" ? !$0.contains(" by ") : $0.hasSuffix(" by \(system)") },
                        "\(system): \(run.stderr)")
                #expect((0..<3).allSatisfy { run.lines.contains("SKYNET_SEEN=\($0)") }, "\(system): the job printed its environment")
                #expect(!run.lines.contains { $0.hasPrefix("SKYNET_TOKEN") }, "\(system): \(run.stdout)")
                #expect(!TokenScratch.leaks(token, into: run.stdout + run.stderr), "\(system)")
            }
            _ = try await node.stop()
        }
    }
}
