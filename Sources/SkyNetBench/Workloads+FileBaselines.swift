import Foundation
import SkyNet
import SkyNetLocalHosts
import SkyNetRuntime

/// W14's baselines: the same files moved by `scp`, by a raw TCP pipe and by GNU parallel.
extension Workloads {
    /// `scp` of the same files: per host its half up into a folder of the host's home, then
    /// that folder back (`-r`, one login), both hosts at once. Legacy mode (`-O`): the test
    /// hosts' sshd declares no sftp subsystem. MiB/s moved, there and back.
    func scp(_ files: BenchFiles, to hosts: [SSHTestHost], client: SSHTestClient, scpPath: String) throws -> Double {
        let options = Array(client.commandWords().dropFirst()) + ["-o", "BatchMode=yes", "-O", "-q"]
        // Hosts still copying, the first failure, and when the last copy ended.
        let outcome = Guarded((left: hosts.count, failure: String?.none, ended: ContinuousClock.now))
        // Every folder first: nothing below throws once a thread runs.
        for host in hosts { try FileManager.default.createDirectory(atPath: host.home + "/w14-scp", withIntermediateDirectories: true) }
        let started = ContinuousClock.now
        for (index, host) in hosts.enumerated() {
            let share = files.names.enumerated().filter { $0.offset % hosts.count == index }.map(\.element)
            let remote = host.home + "/w14-scp", back = files.path("scp-back-\(index)")
            startThread(named: "bench-scp-\(index)") {
                var failure: String?
                do {
                    let port = ["-P", String(host.port)]
                    _ = try ChildRun.run(scpPath, options + port + share + ["\(host.address):\(remote)/"], in: files.folder)
                    _ = try ChildRun.run(scpPath, options + port + ["-r", "\(host.address):\(remote)", back], in: files.folder)
                } catch {
                    failure = "scp to \(host.login): \(error)"
                }
                let ended = ContinuousClock.now
                // Removed (untimed) before this thread counts as done: the next run makes it again.
                try? FileManager.default.removeItem(atPath: remote)
                outcome.withLock { state in
                    state.left -= 1
                    state.ended = max(state.ended, ended)
                    if state.failure == nil { state.failure = failure }
                }
            }
        }
        let (failure, ended) = outcome.wait(while: { $0.left > 0 }, then: { state, _ in (state.failure, state.ended) })
        let seconds = (ended - started).seconds
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
    func rawPipe(_ files: BenchFiles) throws -> Double {
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
    func gnuParallel(_ path: String, _ files: BenchFiles, inputs: String, count: Int, hosts: [SSHTestHost],
                             sshCommand: String) throws -> Double {
        let workdir = files.path("parallel-work")
        defer { try? FileManager.default.removeItem(atPath: workdir) }
        let run = try ChildRun.run(path, ["--will-cite", "--ssh", sshCommand + " -o BatchMode=yes",
                                          "-S", hosts.map { "4/\($0.login)" }.joined(separator: ","), "--workdir", workdir,
                                          "--trc", "{}.out", "cp", "{}", "{}.out", "::::", inputs], in: files.folder)
        try files.checkAndRemoveReturned(first: count)
        return 2 * Double(files.bytes * count) / Double(1 << 20) / run.seconds
    }
}
