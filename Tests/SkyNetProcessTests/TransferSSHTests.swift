import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// Files that travel over SSH links (`scan --ssh`): two real sshd hosts on loopback running
    /// the built `skynet node --stdio`, only they doing the work (`--local-capacity 0`).
    @Suite(.serialized, .timeLimit(.minutes(3)),
           .enabled(if: SSHTestHost.isAvailable, "needs /usr/sbin/sshd, ssh and ssh-keygen (apt-get install openssh-server)"))
    struct TransferSSHTests {
        static let host = SSHTestHost.Options(skynet: skynetBinary.path)

        /// `scan --ssh 2/H1,2/H2 --ssh-command … --local-capacity 0 ARGUMENTS…` from `work`,
        /// noting the pids of the hosts' nodes while it runs.
        static func scan(_ hosts: [SSHTestHost], client: SSHTestClient, in work: String, _ arguments: [String])
            async throws -> (run: Finished, nodes: Set<Int32>) {
            let seen = Locked(Set<Int32>())
            let watcher = Task {
                while !Task.isCancelled {
                    for host in hosts { if let node = host.nodeProcess() { seen.withLock { _ = $0.insert(node.pid) } } }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            defer { watcher.cancel() }
            let run = try await TransferHarness.run(
                in: work, ["scan", "--ssh", hosts.map { "2/" + $0.login }.joined(separator: ","), "--ssh-command", client.commandLine(),
                           "--local-capacity", "0", "--failing-every", "0"] + arguments, limit: .seconds(120))
            watcher.cancel()
            return (run, seen.withLock { $0 })
        }

        /// The work roots the nodes `pids` made in the hosts' temporary directory (/tmp: an
        /// ssh session's environment does not set TMPDIR) that are still there.
        static func rootsLeft(by pids: Set<Int32>) -> [String] {
            TransferHarness.nodeRoots(in: "/tmp").filter { TransferHarness.pid(ofRoot: $0).map(pids.contains) ?? false }
        }

        @Test func randomFilesComeBackByteExactOverTwoSSHHostsAndTheyKeepNothing() async throws {
            try await withSSHTestHosts(count: 2, options: Self.host) { hosts, client in
                try await TransferHarness.withFolder { folder in
                    let work = try TransferHarness.makeFolder(folder + "/work")
                    let sizes: [(String, Int)] = [("empty.bin", 0), ("one.bin", 1), ("mib plus one.bin", (1 << 20) + 1),
                                                  (#"it's "quoted".bin"#, 4_000), ("sub/ü ☕.bin", 9_000)]
                    var inputs: [String] = []
                    for (index, (path, size)) in sizes.enumerated() {
                        try RandomFiles.write(work + "/" + path, size: size, seed: 4100 + UInt64(index))
                        inputs.append(path)
                    }
                    inputs.append(try RandomFiles.write(folder + "/else/absolute.bin", size: 300_000, seed: 4199))
                    try TransferHarness.writeList(inputs, at: work + "/inputs.txt")
                    let paths = inputs.map { $0.hasPrefix("/") ? $0 : work + "/" + $0 }
                    let digests = try await RandomFiles.sha256(paths)

                    let (run, nodes) = try await Self.scan(hosts, client: client, in: work,
                                                           ["--inputs", "inputs.txt", "--job", "t=cp {} {}.out", "--trc", "{}.out"])
                    #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.completions.map(\.input).sorted() == Array(0..<paths.count), "\(run.stdout)")
                    #expect(run.completions.allSatisfy { system in hosts.contains { $0.login == system.system } }, "\(run.stdout)")
                    #expect(try await RandomFiles.sha256(paths.map { $0 + ".out" }) == digests)
                    for path in paths { #expect(RandomFiles.sameBytes(path, path + ".out"), "\(path)") }
                    #expect(try await RandomFiles.sha256(paths) == digests, "the inputs are untouched")
                    #expect(TransferHarness.partFiles(RandomFiles.tree(folder)).isEmpty)
                    // The hosts' nodes ended with the scan, and took their work roots with them.
                    #expect(!nodes.isEmpty, "no node was seen on the hosts")
                    let left = await processesLeft(on: hosts, within: .seconds(3))
                    #expect(left.isEmpty, "\(left.mapValues(\.described))")
                    let gone = await TransferHarness.poll(within: .seconds(3)) { Self.rootsLeft(by: nodes).isEmpty }
                    #expect(gone, "\(Self.rootsLeft(by: nodes))")
                }
            }
        }

        /// `--basefile process.sh` with `--job run='./process.sh {}'`: the script reaches each
        /// host once, executable, in every task's directory, and what it derives comes back.
        @Test func aBasefileScriptRunsOnEachHostAndItsOutputComesBack() async throws {
            try await withSSHTestHosts(count: 2, options: Self.host) { hosts, client in
                try await TransferHarness.withFolder { folder in
                    let work = try TransferHarness.makeFolder(folder + "/work")
                    let script = work + "/process.sh"
                    try Data("#!/bin/sh\n# Upper-cases its input into INPUT.upper, and says where it ran.\ntr 'a-z' 'A-Z' < \"$1\" > \"$1.upper\"\necho \"done $1\"\n".utf8)
                        .write(to: URL(fileURLWithPath: script))
                    #expect(chmod(script, 0o755) == 0)
                    var inputs: [String] = []
                    for index in 0..<6 {
                        let path = "texts/note \(index).txt"
                        try TransferHarness.makeFolder(work + "/texts")
                        try Data("note \(index): files travel with their tasks, äöü stays\n".utf8).write(to: URL(fileURLWithPath: work + "/" + path))
                        inputs.append(path)
                    }
                    try TransferHarness.writeList(inputs, at: work + "/inputs.txt")
                    let (run, _) = try await Self.scan(hosts, client: client, in: work,
                                                       ["--inputs", "inputs.txt", "--job", "run=./process.sh {}", "--transfer",
                                                        "--return", "{}.upper", "--cleanup", "--basefile", "process.sh"])
                    #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
                    #expect(run.completions.map(\.input).sorted() == Array(0..<inputs.count), "\(run.stdout)")
                    for input in inputs {
                        let original = try String(contentsOfFile: work + "/" + input, encoding: .utf8)
                        let upper = try String(contentsOfFile: work + "/" + input + ".upper", encoding: .utf8)
                        // tr works on bytes: ASCII letters change, the UTF-8 of äöü does not.
                        #expect(upper == String(original.map { $0.isASCII ? Character($0.uppercased()) : $0 }), "\(input)")
                    }
                    #expect(run.completions.allSatisfy { system in hosts.contains { $0.login == system.system } }, "\(run.stdout)")
                }
            }
        }
    }
}
