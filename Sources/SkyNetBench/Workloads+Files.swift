import Foundation
import SkyNet
import SkyNetTestSupport

extension Workloads {
    /// W14: files that travel with their tasks. 200 files of 4 MiB (seeded random), each sent
    /// to a node, copied there (`cp {} {}.out`) and its copy returned (`--trc {}.out`), 2 hosts
    /// × 4 slots, a coordinator that only dispatches (`--local-capacity 0`). Moved = 200 × 4 MiB
    /// × 2; a rate is moved / the wall time of the whole command (logins included). Beside:
    /// - `scp` of the same files to and back from the same ssh hosts, both hosts at once, with
    ///   the same ssh options (goal: ours over ssh ≥ 0.8× it);
    /// - ours over TCP links (two local nodes × 4) without and with a token, beside a raw TCP
    ///   pipe in this process (`RawPipe`; goal: with a token ≥ 0.5× it);
    /// - GNU parallel `-S 4/h1,4/h2 --trc {}.out cp {} {}.out` on the first 40 files only (it
    ///   takes seconds per file; goal: ours over ssh ≥ 5× its rate);
    /// - the peak resident memory of the coordinator and of every node (goal ≤ 64 MB each).
    func filesTravel() throws -> [Row] {
        if let reason = SSHTestHost.unavailableReason { throw BenchError("W14: \(reason)") }
        let count = 200, parallelCount = 40, job = "t=cp {} {}.out"
        let files = try BenchFiles.make(count: count, bytes: 4 << 20, seed: 14)
        defer { files.remove() }
        let allInputs = try files.inputs(first: count), warmInputs = try files.inputs(first: 20)
        let parallelInputs = try files.inputs(first: parallelCount)
        let mebibytesPerFile = 2 * Double(files.bytes) / Double(1 << 20)  // there and back

        let clientFolder = NSTemporaryDirectory() + "skynet-bench-w14-client-\(UUID().uuidString)"
        let skynetPath = skynet.path
        let client = try blocking { try await SSHTestClient.make(in: clientFolder) }
        let started = Locked<[SSHTestHost]>([])
        defer {
            _ = try? blocking { for host in started.withLock({ $0 }) { await host.stop() } }
            try? FileManager.default.removeItem(atPath: clientFolder)
        }
        for _ in 0..<2 {
            let host = try blocking { try await SSHTestHost.start(client: client, options: .init(skynet: skynetPath)) }
            started.withLock { $0.append(host) }
        }
        let hosts = started.withLock { $0 }
        let sshCommand = client.commandLine()

        // No SKYNET_TOKEN from the caller's environment: the token links get theirs from a file.
        var environment = ProcessInfo.processInfo.environment
        environment["SKYNET_TOKEN"] = nil
        let tokenFile = Children.temporary(files.path("token"))
        defer { Children.remove(tokenFile) }
        guard FileManager.default.createFile(atPath: tokenFile, contents: Data(Secrets.hex(Secrets.randomBytes(32)).utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw BenchError("W14: cannot write the token file \(tokenFile)")
        }
        let nodeArguments = ["--job", job, "--capacity", "4"]
        let plain = try BenchCluster(skynet: skynet, count: 2, arguments: nodeArguments, environment: environment)
        defer { plain.stop() }
        let signed = try BenchCluster(skynet: skynet, count: 2, arguments: nodeArguments + ["--token-file", tokenFile],
                                      environment: environment)
        defer { signed.stop() }
        let sshPeers = ["--ssh", hosts.map { "4/\($0.login)" }.joined(separator: ","), "--ssh-command", sshCommand]
        let plainPeers = ["--cluster", plain.file], signedPeers = ["--cluster", signed.file, "--token-file", tokenFile]

        /// One `skynet scan --trc` over `peers`: MiB/s moved and the coordinator's peak RSS.
        func ours(_ peers: [String], inputs: String, count: Int) throws -> (rate: Double, peakKiB: Int) {
            let run = try ChildRun.run(skynetPath, ["scan", "--json", "--quiet", "--inputs", inputs, "--job", job, "--trc", "{}.out",
                                                    "--local-capacity", "0", "--failing-every", "0"] + peers,
                                       in: files.folder, environment: environment)
            guard let last = run.stdout.split(separator: "\n").last,
                  let summary = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
                  let completed = summary["completed"] as? Int, completed == count
            else { throw BenchError("W14: the scan did not complete \(count) tasks: \(run.stdout.suffix(500))") }
            try files.checkAndRemoveReturned(first: count)
            return (mebibytesPerFile * Double(count) / run.seconds, run.peakKiB)
        }

        let parallel = findOnPath("parallel"), rsync = findOnPath("rsync")
        let parallelMissing = parallel == nil ? "GNU parallel is not on PATH (Debian: apt-get install parallel)"
            : rsync == nil ? "rsync is not on PATH, and parallel's --trc needs it at both ends (Debian: apt-get install rsync)" : nil
        if let parallelMissing { note("W14: \(parallelMissing): its row is skipped") }
        guard let scpPath = findOnPath("scp") else { throw BenchError("W14: scp is not on PATH (Debian: apt-get install openssh-client)") }

        // Warm-up: host keys learnt (accept-new), page cache filled, nodes' first work done.
        _ = try ours(sshPeers, inputs: warmInputs, count: 20)
        _ = try ours(plainPeers, inputs: warmInputs, count: 20)
        _ = try ours(signedPeers, inputs: warmInputs, count: 20)

        var measured = Measured()
        for _ in 0..<runs {
            let nodeMemory = MarkedNodeMemory(hosts: hosts)
            let overSSH = try ours(sshPeers, inputs: allInputs, count: count)
            measured.sshNodeKiB.append(Double(nodeMemory.finish().first ?? 0))
            measured.ssh.append(overSSH.rate)
            measured.scp.append(try scp(files, to: hosts, client: client, scpPath: scpPath))
            let overTCP = try ours(plainPeers, inputs: allInputs, count: count)
            measured.tcp.append(overTCP.rate)
            let withToken = try ours(signedPeers, inputs: allInputs, count: count)
            measured.token.append(withToken.rate)
            measured.coordinatorKiB.append([overSSH.peakKiB, overTCP.peakKiB, withToken.peakKiB].map(Double.init))
            measured.raw.append(try rawPipe(files))
            if let parallel, parallelMissing == nil {
                measured.parallel.append(try gnuParallel(parallel, files, inputs: parallelInputs, count: parallelCount,
                                                         hosts: hosts, sshCommand: sshCommand))
            }
        }
        // VmHWM of the long-lived TCP nodes: their peak over every run above.
        let tcpNodeKiB = (plain.nodes + signed.nodes).compactMap { statusKiB("VmHWM", of: $0.processIdentifier) }.max() ?? 0
        return fileRows(measured, tcpNodeKiB: Double(tcpNodeKiB), parallelMissing: parallelMissing, parallelCount: parallelCount)
    }

    /// W14's rates (MiB/s, one per run) and peaks (KiB).
    struct Measured {
        var ssh: [Double] = [], scp: [Double] = [], tcp: [Double] = [], token: [Double] = [], raw: [Double] = []
        var parallel: [Double] = [], sshNodeKiB: [Double] = []
        /// Per run: the coordinator's peak over ssh links, over TCP links, over TCP with a token.
        var coordinatorKiB: [[Double]] = []
    }

    /// `scp` of the same files: per host its half up into a folder of the host's home, then
    /// that folder back (`-r`, one login), both hosts at once. Legacy mode (`-O`): the test
    /// hosts' sshd declares no sftp subsystem. MiB/s moved, there and back.
    private func scp(_ files: BenchFiles, to hosts: [SSHTestHost], client: SSHTestClient, scpPath: String) throws -> Double {
        let options = Array(client.commandWords().dropFirst()) + ["-o", "BatchMode=yes", "-O", "-q"]
        let outcome = Guarded((left: hosts.count, failure: String?.none))
        let started = ContinuousClock.now
        for (index, host) in hosts.enumerated() {
            let share = files.names.enumerated().filter { $0.offset % hosts.count == index }.map(\.element)
            let remote = host.home + "/w14-scp", back = files.path("scp-back-\(index)")
            try FileManager.default.createDirectory(atPath: remote, withIntermediateDirectories: true)
            startThread(named: "bench-scp-\(index)") {
                defer { try? FileManager.default.removeItem(atPath: remote) }
                var failure: String?
                do {
                    let port = ["-P", String(host.port)]
                    _ = try ChildRun.run(scpPath, options + port + share + ["\(host.address):\(remote)/"], in: files.folder)
                    _ = try ChildRun.run(scpPath, options + port + ["-r", "\(host.address):\(remote)", back], in: files.folder)
                } catch {
                    failure = "scp to \(host.login): \(error)"
                }
                outcome.withLock { state in
                    state.left -= 1
                    if state.failure == nil { state.failure = failure }
                }
            }
        }
        let failure = outcome.wait(while: { $0.left > 0 }, then: { state, _ in state.failure })
        let seconds = (ContinuousClock.now - started).seconds
        defer { for index in hosts.indices { try? FileManager.default.removeItem(atPath: files.path("scp-back-\(index)")) } }
        if let failure { throw BenchError("W14: \(failure)") }
        try files.checkAndRemoveReturned(first: files.names.count) { name in
            let index = files.names.firstIndex(of: name) ?? 0
            return files.path("scp-back-\(index % hosts.count)/\(name)")
        }
        return 2 * Double(files.bytes * files.names.count) / Double(1 << 20) / seconds
    }

    /// The raw TCP pipe: per node one loopback connection each way, all four at once, each
    /// carrying half the files (`RawPipe`). MiB/s moved, there and back.
    private func rawPipe(_ files: BenchFiles) throws -> Double {
        let folder = files.path("raw")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for side in ["up", "down"] { try FileManager.default.createDirectory(atPath: folder + "/" + side, withIntermediateDirectories: true) }
        var lanes: [RawPipe.Lane] = []
        for node in 0..<2 {
            let share = files.names.enumerated().filter { $0.offset % 2 == node }.map(\.element)
            lanes.append(.init(sources: share.map(files.path), destinations: share.map { folder + "/up/" + $0 }))
            lanes.append(.init(sources: share.map(files.path), destinations: share.map { folder + "/down/" + $0 + ".out" }))
        }
        let seconds = try RawPipe.move(lanes)
        try files.checkAndRemoveReturned(first: files.names.count) { folder + "/up/" + $0 }
        try files.checkAndRemoveReturned(first: files.names.count) { folder + "/down/" + $0 + ".out" }
        return 2 * Double(files.bytes * files.names.count) / Double(1 << 20) / seconds
    }

    /// GNU parallel's `--trc` on the first `count` files, to the same hosts with the same ssh
    /// options; its remote work folder is one of ours (`--workdir`), not the login's home.
    private func gnuParallel(_ path: String, _ files: BenchFiles, inputs: String, count: Int, hosts: [SSHTestHost],
                             sshCommand: String) throws -> Double {
        let workdir = files.path("parallel-work")
        defer { try? FileManager.default.removeItem(atPath: workdir) }
        let run = try ChildRun.run(path, ["--will-cite", "--ssh", sshCommand + " -o BatchMode=yes",
                                          "-S", hosts.map { "4/\($0.login)" }.joined(separator: ","), "--workdir", workdir,
                                          "--trc", "{}.out", "cp", "{}", "{}.out", "::::", inputs], in: files.folder)
        try files.checkAndRemoveReturned(first: count)
        return 2 * Double(files.bytes * count) / Double(1 << 20) / run.seconds
    }

    private func fileRows(_ m: Measured, tcpNodeKiB: Double, parallelMissing: String?, parallelCount: Int) -> [Row] {
        let overSCP = zip(m.ssh, m.scp).map { $0 / $1 }, overRaw = zip(m.token, m.raw).map { $0 / $1 }
        let overParallel = zip(m.ssh, m.parallel).map { $0 / $1 }
        let limitKiB = 64.0 * 1024
        var scpRow = Row(workload: "W14", measure: "scp -O up then back, 2 hosts at once", unit: "MiB/s", values: m.scp)
        scpRow.note = "legacy scp protocol (-O): the test hosts' sshd has no sftp subsystem"
        var parallelRow = Row(workload: "W14", measure: "GNU parallel -S 4/h1,4/h2 --trc (\(parallelCount) files)", unit: "MiB/s",
                              values: m.parallel)
        parallelRow.note = parallelMissing.map { "skipped: \($0)" }
            ?? "\(parallelCount) of the 200 files (it takes seconds per file); rsync -z both ways, one login per transfer"
        var rawRow = Row(workload: "W14", measure: "raw TCP pipe (Swift, 2 x 2 connections)", unit: "MiB/s", values: m.raw)
        rawRow.note = "256 KiB pread -> send, recv -> pwrite; no hash, no framing"
        var rows = [
            Row(workload: "W14", measure: "200 x 4 MiB --trc over ssh links", unit: "MiB/s", values: m.ssh),
            scpRow,
            Row(workload: "W14", measure: "ssh links / scp", unit: "ratio", values: overSCP, target: ">= 0.8",
                met: median(overSCP) >= 0.8),
            Row(workload: "W14", measure: "200 x 4 MiB --trc over TCP links", unit: "MiB/s", values: m.tcp),
            Row(workload: "W14", measure: "200 x 4 MiB --trc over TCP links, token", unit: "MiB/s", values: m.token),
            rawRow,
            Row(workload: "W14", measure: "TCP links with token / raw pipe", unit: "ratio", values: overRaw, target: ">= 0.5",
                met: median(overRaw) >= 0.5),
            parallelRow,
        ]
        if !m.parallel.isEmpty {
            rows.append(Row(workload: "W14", measure: "ssh links / GNU parallel", unit: "ratio", values: overParallel,
                            target: ">= 5", met: median(overParallel) >= 5))
        }
        var tcpNodes = Row(workload: "W14", measure: "peak RSS, TCP node", unit: "KiB", values: [tcpNodeKiB],
                           target: "<= 65536 (64 MB)", met: tcpNodeKiB <= limitKiB)
        tcpNodes.note = "VmHWM of the 4 TCP nodes over every run, the highest"
        let coordinatorKiB = m.coordinatorKiB.map { $0.max() ?? 0 }
        var coordinator = Row(workload: "W14", measure: "peak RSS, coordinator", unit: "KiB", values: coordinatorKiB,
                              target: "<= 65536 (64 MB)", met: (coordinatorKiB.max() ?? 0) <= limitKiB)
        let kinds = (0..<3).map { kind in median(m.coordinatorKiB.map { $0[kind] }) }
        coordinator.note = String(format: "the highest of its three scans per run; medians: over ssh links %.0f, over TCP %.0f, "
                                  + "over TCP with a token %.0f KiB", kinds[0], kinds[1], kinds[2])
        return rows + [
            coordinator,
            Row(workload: "W14", measure: "peak RSS, ssh node", unit: "KiB", values: m.sshNodeKiB,
                target: "<= 65536 (64 MB)", met: (m.sshNodeKiB.max() ?? 0) <= limitKiB),
            tcpNodes,
        ]
    }
}
