import Foundation
import SkyNet
import SkyNetRuntime
import SkyNetTransport

extension SSHTestHost {
    /// Makes the folder with `bin/` (holding `skynet` when given) and `home/`, and, as root,
    /// sshd's privilege-separation folder (absent in containers).
    static func prepareFolder(_ folder: String, options: Options) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: folder + "/bin", withIntermediateDirectories: true)
        try files.createDirectory(atPath: folder + "/home", withIntermediateDirectories: true)
        if let skynet = options.skynet {
            try files.createSymbolicLink(atPath: folder + "/bin/skynet", withDestinationPath: skynet)
        }
        if geteuid() == 0 {
            try files.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true,
                                      attributes: [.posixPermissions: 0o755])
        }
    }

    /// The host key, and `authorized_keys` holding the client's public key.
    static func makeKeys(in folder: String, client: SSHTestClient) async throws {
        let run = try await ToolRun.run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "skynet-test-host", "-f", folder + "/host_key"])
        guard run.exit.succeeded else { throw SSHTestHostError(description: "ssh-keygen host_key: \(run.exit): \(run.stderr)") }
        let publicKey = try String(contentsOfFile: client.key + ".pub", encoding: .utf8)
        try publicKey.write(toFile: folder + "/authorized_keys", atomically: true, encoding: .utf8)
    }

    /// Starts sshd on the folder's config and awaits its `Server listening on` line (within
    /// 10 s): readiness sshd itself reports, nothing slept for. On failure sshd is reaped and
    /// the error holds its log.
    static func launch(folder: String, launcher: [String]) async throws -> ChildProcess {
        let words = launcher + [sshdPath, "-D", "-e", "-f", folder + "/sshd_config"]
        var options = ChildProcess.Options(arguments: Array(words.dropFirst()))
        // Its own group: a Ctrl-C at the test's terminal is not sshd's to handle.
        options.ownProcessGroup = true
        options.stderr = .lines(maxLength: 4096, keep: 2000)
        // posix_spawn waits for the exec: not on the cooperative pool.
        let sshd = try await onBlockingPool { [options] in try ChildProcess.spawn(words[0], options) }
        guard let log = sshd.stderrLines else { throw SSHTestHostError(description: "sshd's stderr is not read") }
        let ready: String??
        do {
            ready = try await withTimeout(.seconds(10)) { await log.first { $0.hasPrefix("Server listening on") } }
        } catch {
            ready = nil
        }
        guard case .some(.some) = ready else {
            await sshd.stop(grace: .zero)
            let lines = log.lines
            let why = ready == nil ? "did not say it listens within 10 s" : "exited (\(sshd.exit.current.map(String.init(describing:)) ?? "?"))"
            throw SSHTestHostError(
                description: "sshd \(why): \(lines.suffix(10).joined(separator: " | "))",
                addressInUse: lines.contains { $0.contains("Address already in use") })
        }
        return sshd
    }

    /// A loopback port nobody listens on right now (the kernel's pick for port 0).
    static func freeLoopbackPort() throws -> Int {
        let socket = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { socket.close() }
        return try socket.localAddress().port
    }
}
