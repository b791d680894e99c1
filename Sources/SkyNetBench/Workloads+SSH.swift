import Foundation
import SkyNet
import SkyNetLocalHosts
import SkyNetRuntime

extension Workloads {
    /// W13: links over ssh, to two hosts that are real OpenSSH servers on loopback (the test
    /// suite's `SSHTestHost`: throwaway keys, each login running this build's `skynet`), 4
    /// slots each, a coordinator that only dispatches:
    /// - 2,000 tasks of `/bin/true` over the ssh links, beside the same over TCP links (two
    ///   local nodes × 4) and beside GNU parallel `-S 4/h1,4/h2 true` on the same hosts with
    ///   the same ssh options (parallel logs in once per job: it runs `parallelTotal` jobs);
    /// - the time from starting `skynet scan --ssh` to the first task completed on a host,
    ///   and with `--ship` to a host without skynet (its cache emptied before each run).
    func sshLinks() throws -> [Row] {
        if let reason = SSHTestHost.unavailableReason { throw BenchError("W13: \(reason)") }
        let total = 2000, parallelTotal = 100, job = "t=/bin/true"
        let inputsFile = Children.temporary(NSTemporaryDirectory() + "skynet-bench-w13-\(UUID().uuidString).txt")
        defer { Children.remove(inputsFile) }
        try ((0..<parallelTotal).map(String.init).joined(separator: "\n") + "\n").write(toFile: inputsFile, atomically: true, encoding: .utf8)
        let folder = NSTemporaryDirectory() + "skynet-bench-w13-client-\(UUID().uuidString)"
        let skynetPath = skynet.path
        let client = try blocking { try await SSHTestClient.make(in: folder) }
        let hosts = Locked<[SSHTestHost]>([])
        defer {
            _ = try? blocking { for host in hosts.withLock({ $0 }) { await host.stop() } }
            try? FileManager.default.removeItem(atPath: folder)
        }
        for options in [SSHTestHost.Options(skynet: skynetPath), SSHTestHost.Options(skynet: skynetPath),
                        SSHTestHost.Options(skynet: skynetPath, skynetOnPath: false)] {
            let host = try blocking { try await SSHTestHost.start(client: client, options: options) }
            hosts.withLock { $0.append(host) }
        }
        let (h1, h2, bare) = hosts.withLock { ($0[0], $0[1], $0[2]) }
        let sshCommand = client.commandLine()
        let sshArguments = ["--ssh", "4/\(h1.login),4/\(h2.login)", "--ssh-command", sshCommand]
        let tcp = try BenchCluster(skynet: skynet, count: 2, arguments: ["--job", job, "--capacity", "4"])
        defer { tcp.stop() }

        func ours(_ peers: [String], _ count: Int) throws -> Double {
            let run = try ScanRun.run(skynet, peers + ["--local-capacity", "0", "--failing-every", "0", "--job", job,
                                                       "--total", String(count), "--quiet"])
            guard run.completed == count else { throw BenchError("W13: \(run.completed)/\(count) completed") }
            return Double(count) / run.seconds
        }
        func gnuParallel(_ path: String) throws -> Double {
            let child = try ChildRun.run(path, ["--will-cite", "--ssh", sshCommand + " -o BatchMode=yes",
                                                "-S", "4/\(h1.login),4/\(h2.login)", "true", "::::", inputsFile])
            guard child.status == 0 else { throw BenchError("W13: parallel exited with status \(child.status)") }
            return Double(parallelTotal) / child.seconds
        }
        /// Seconds from the spawn of `skynet scan` to its first `completed` event from a host.
        func firstRemoteTask(_ peers: [String]) throws -> Double {
            let run = try ChildRun.stream(skynet.path, ["scan", "--json"] + peers + ["--local-capacity", "0", "--failing-every", "0",
                                                                                   "--job", job, "--total", "1", "--quiet"],
                                          firstLine: { $0.hasPrefix(#"{"event":"completed""#) })
            guard run.status == 0, let seconds = run.firstLineSeconds else { throw BenchError("W13: scan exited \(run.status)") }
            return seconds
        }
        let lookup = try blocking { await GNUParallel.lookUpOnPath() }
        let parallel = lookup.path
        if let reason = lookup.unavailableReason { note("W13: \(reason): its column is skipped") }
        _ = try ours(sshArguments, 200)  // warm-up: host keys learnt, page cache
        _ = try ours(["--cluster", tcp.file], 200)
        var overSSH: [Double] = [], overTCP: [Double] = [], parallelRates: [Double] = [], first: [Double] = [], shipped: [Double] = []
        for _ in 0..<runs {
            overSSH.append(try ours(sshArguments, total))
            overTCP.append(try ours(["--cluster", tcp.file], total))
            if let parallel { parallelRates.append(try gnuParallel(parallel)) }
            first.append(try firstRemoteTask(["--ssh", "4/\(h1.login)", "--ssh-command", sshCommand]))
            try? FileManager.default.removeItem(atPath: bare.home + "/.cache/skynet")
            shipped.append(try firstRemoteTask(["--ssh", "4/\(bare.login)", "--ssh-command", sshCommand, "--ship"]))
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: skynet.path)[.size] as? Int) ?? 0
        return rows(ssh: overSSH, tcp: overTCP, parallel: parallelRates, parallelSkipped: lookup.unavailableReason, first: first,
                    shipped: shipped, shippedBytes: size)
    }

    private func rows(ssh: [Double], tcp: [Double], parallel: [Double], parallelSkipped: String?, first: [Double], shipped: [Double],
                      shippedBytes: Int) -> [Row] {
        let overTCP = zip(ssh, tcp).map { $0 / $1 }, overParallel = zip(ssh, parallel).map { $0 / $1 }
        var parallelRow = Row(workload: "W13", measure: "GNU parallel -S 4/h1,4/h2 true (100 jobs)", unit: "tasks/s", values: parallel)
        parallelRow.skipped = parallelSkipped
        var shipRow = Row(workload: "W13", measure: "scan --ssh --ship to a fresh host: first task", unit: "s", values: shipped)
        shipRow.note = "ships \(shippedBytes) bytes (this build)"
        var rows = [
            Row(workload: "W13", measure: "2000 x /bin/true over ssh links", unit: "tasks/s", values: ssh),
            Row(workload: "W13", measure: "2000 x /bin/true over TCP links", unit: "tasks/s", values: tcp),
            Row(workload: "W13", measure: "ssh / TCP", unit: "ratio", values: overTCP, ideal: "1.000", target: ">= 0.8",
                met: median(overTCP) >= 0.8),
            parallelRow,
        ]
        if !parallel.isEmpty {
            rows.append(Row(workload: "W13", measure: "ssh links / GNU parallel", unit: "ratio", values: overParallel, target: ">= 100",
                            met: median(overParallel) >= 100))
        }
        return rows + [
            Row(workload: "W13", measure: "scan --ssh to the first task on a host", unit: "s", values: first, target: "<= 0.5",
                met: median(first) <= 0.5),
            shipRow,
        ]
    }
}
