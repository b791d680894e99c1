import Foundation
import SkyNet
import SkyNetLocalHosts
import SkyNetRuntime

extension Workloads {
    /// W14: files that travel with their tasks. 200 files of 4 MiB (seeded random), each sent
    /// to a node, copied there (`cp {} {}.out`) and its copy returned (`--trc {}.out`), 2 hosts
    /// × 4 slots, a coordinator that only dispatches (`--local-capacity 0`), text output (as
    /// `scp`, nothing hashed to report; `--json` is measured beside). Moved = 200 × 4 MiB × 2; a
    /// rate is moved / the wall time of the whole command (logins included). Beside:
    /// - `scp` of the same files to and back from the same ssh hosts, both hosts at once, with
    ///   the same ssh options (goal: ours over ssh ≥ 0.8× it, over encrypted TCP ≥ 1.0× it);
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

        /// One `skynet scan --trc` over `peers`: MiB/s moved and the coordinator's peak RSS. With
        /// `json`, `--json`, whose events give each returned file's SHA-256 (so it is computed).
        func ours(_ peers: [String], inputs: String, count: Int, json: Bool = false) throws -> (rate: Double, peakKiB: Int) {
            let run = try ChildRun.run(skynetPath, ["scan", "--quiet", "--inputs", inputs, "--job", job, "--trc", "{}.out",
                                                    "--local-capacity", "0", "--failing-every", "0"] + (json ? ["--json"] : []) + peers,
                                       in: files.folder, environment: environment)
            let lines = run.stdout.split(separator: "\n")
            let completed: Bool
            if json {
                let summary = lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                completed = summary?["completed"] as? Int == count
            } else {
                completed = lines.contains { $0.hasPrefix("Finished \(count) scans in ") && !$0.contains("gave up") }
            }
            guard completed else { throw BenchError("W14: the scan did not complete \(count) tasks: \(run.stdout.suffix(500))") }
            try files.checkAndRemoveReturned(first: count)
            return (mebibytesPerFile * Double(count) / run.seconds, run.peakKiB)
        }

        let lookup = try blocking { await GNUParallel.lookUpOnPath() }
        let parallel = lookup.path
        let parallelMissing = lookup.unavailableReason ?? (findOnPath("rsync") == nil
            ? "rsync is not on PATH, and parallel's --trc needs it at both ends: apt-get install rsync" : nil)
        if let parallelMissing { note("W14: \(parallelMissing): its row is skipped") }
        guard let scpPath = findOnPath("scp") else { throw BenchError("W14: scp is not on PATH (Debian: apt-get install openssh-client)") }

        // Warm-up: host keys learnt (accept-new), page cache filled, nodes' first work done.
        _ = try ours(sshPeers, inputs: warmInputs, count: 20)
        _ = try ours(plainPeers, inputs: warmInputs, count: 20)
        _ = try ours(signedPeers, inputs: warmInputs, count: 20)

        var measured = Measured()
        for _ in 0..<runs {
            let nodeMemory = MarkedNodeMemory(hosts: hosts)
            let scanned = Result { try ours(sshPeers, inputs: allInputs, count: count) }
            let nodePeaks = nodeMemory.finish()  // on every path: its thread ends with it
            let overSSH = try scanned.get()
            guard let nodePeak = nodePeaks.first else { throw BenchError("W14: no skynet node was seen on the ssh hosts") }
            measured.sshNodeKiB.append(Double(nodePeak))
            measured.ssh.append(overSSH.rate)
            measured.scp.append(try scp(files, to: hosts, client: client, scpPath: scpPath))
            let overTCP = try ours(plainPeers, inputs: allInputs, count: count)
            measured.tcp.append(overTCP.rate)
            let withToken = try ours(signedPeers, inputs: allInputs, count: count)
            measured.token.append(withToken.rate)
            measured.tokenJSON.append(try ours(signedPeers, inputs: allInputs, count: count, json: true).rate)
            measured.coordinatorKiB.append([overSSH.peakKiB, overTCP.peakKiB, withToken.peakKiB].map(Double.init))
            measured.raw.append(try rawPipe(files))
            if let parallel, parallelMissing == nil {
                measured.parallel.append(try gnuParallel(parallel, files, inputs: parallelInputs, count: parallelCount,
                                                         hosts: hosts, sshCommand: sshCommand))
            }
        }
        // VmHWM of the long-lived TCP nodes: their peak over every run above.
        let tcpNodeKiB = (plain.nodes + signed.nodes).compactMap { statusNumber("VmHWM", of: $0.processIdentifier) }.max() ?? 0
        return fileRows(measured, tcpNodeKiB: Double(tcpNodeKiB), parallelMissing: parallelMissing, parallelCount: parallelCount)
    }

    /// W14's rates (MiB/s, one per run) and peaks (KiB).
    struct Measured {
        var ssh: [Double] = [], scp: [Double] = [], tcp: [Double] = [], token: [Double] = [], raw: [Double] = []
        /// Over TCP with a token and `--json`: each returned file hashed for its event.
        var tokenJSON: [Double] = []
        var parallel: [Double] = [], sshNodeKiB: [Double] = []
        /// Per run: the coordinator's peak over ssh links, over TCP links, over TCP with a token.
        var coordinatorKiB: [[Double]] = []
    }

    private func fileRows(_ m: Measured, tcpNodeKiB: Double, parallelMissing: String?, parallelCount: Int) -> [Row] {
        let overSCP = zip(m.ssh, m.scp).map { $0 / $1 }, overRaw = zip(m.token, m.raw).map { $0 / $1 }
        let encryptedOverSCP = zip(m.token, m.scp).map { $0 / $1 }
        let overParallel = zip(m.ssh, m.parallel).map { $0 / $1 }
        let limitKiB = 64.0 * 1024
        var scpRow = Row(workload: "W14", measure: "scp -O up then back, 2 hosts at once", unit: "MiB/s", values: m.scp)
        scpRow.note = "legacy scp protocol (-O): the test hosts' sshd has no sftp subsystem"
        var parallelRow = Row(workload: "W14", measure: "GNU parallel -S 4/h1,4/h2 --trc (\(parallelCount) files)", unit: "MiB/s",
                              values: m.parallel)
        parallelRow.skipped = parallelMissing
        if parallelMissing == nil {
            parallelRow.note = "\(parallelCount) of the 200 files (it takes seconds per file); rsync -z both ways, one login per transfer"
        }
        var rawRow = Row(workload: "W14", measure: "raw TCP pipe (Swift, 2 x 2 connections)", unit: "MiB/s", values: m.raw)
        rawRow.note = "256 KiB pread -> send, recv -> pwrite; no hash, no framing"
        var rows = [
            Row(workload: "W14", measure: "200 x 4 MiB --trc over ssh links", unit: "MiB/s", values: m.ssh),
            scpRow,
            Row(workload: "W14", measure: "ssh links / scp", unit: "ratio", values: overSCP, target: ">= 0.8",
                met: median(overSCP) >= 0.8),
            Row(workload: "W14", measure: "200 x 4 MiB --trc over TCP links", unit: "MiB/s", values: m.tcp),
            Row(workload: "W14", measure: "200 x 4 MiB --trc over TCP links, token (encrypted)", unit: "MiB/s", values: m.token),
            Row(workload: "W14", measure: "encrypted TCP links / scp", unit: "ratio", values: encryptedOverSCP, target: ">= 1.0",
                met: median(encryptedOverSCP) >= 1.0),
            Row(workload: "W14", measure: "the same with --json (a SHA-256 per returned file)", unit: "MiB/s", values: m.tokenJSON),
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
