import Foundation

/// Starts one host per entry of `options` (hosts of different kinds side by side: one with
/// `skynet` on its PATH, one without), all authorizing one client made in a folder of its own;
/// runs `body`, and stops every host and removes every folder on every path.
package func withSSHTestHosts<T: Sendable>(
    each options: [SSHTestHost.Options],
    _ body: ([SSHTestHost], SSHTestClient) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-ssh-client-\(UUID().uuidString)").path
    var hosts: [SSHTestHost] = []
    func stopAll() async {
        for host in hosts { await host.stop() }
        try? FileManager.default.removeItem(atPath: folder)
    }
    do {
        let client = try await SSHTestClient.make(in: folder)
        for kind in options { hosts.append(try await SSHTestHost.start(client: client, options: kind)) }
        let result = try await body(hosts, client)
        await stopAll()
        return result
    } catch {
        await stopAll()
        throw error
    }
}

extension SSHTestHost {
    /// The node a session runs: the marked `skynet` process whose parent is no `skynet` (a
    /// node's group keeper is a `skynet` too, started by the node); nil while there is none.
    package func nodeProcess() -> HostProcess? {
        let marked = processes().compactMap(HostProcesses.read)
        let skynets = marked.filter { $0.name == "skynet" || $0.name.hasPrefix("skynet-") }
        let pids = Set(skynets.map(\.pid))
        return skynets.first { !pids.contains($0.parent) }
    }

    /// The marked processes named `name` (a job's `sleep`, `sha256sum`).
    package func processes(named name: String) -> [HostProcess] {
        processes().compactMap(HostProcesses.read).filter { $0.name == name }
    }

    /// Polls (every 20 ms, at most `timeout`) until `holds` is true of the host; returns
    /// whether it became true. Nothing announces a process's start to a stranger: /proc is read.
    package func waitUntil(within timeout: Duration, _ holds: (SSHTestHost) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !holds(self) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
