import Foundation
import SkyNet

/// The ssh side of the SSH tests: a throwaway key pair and a known_hosts file of its own, so
/// nothing of `~/.ssh` (keys, known hosts, config) is read or written. Several `SSHTestHost`s
/// may authorize one client: a scan over two hosts uses one `--ssh-command`.
package struct SSHTestClient: Sendable {
    /// The folder holding `user_key`, `user_key.pub` and `known_hosts` (the caller removes it).
    package let folder: String
    package var key: String { folder + "/user_key" }
    package var knownHosts: String { folder + "/known_hosts" }

    /// Makes `folder` (it must not exist yet) and a fresh ed25519 key in it.
    package static func make(in folder: String) async throws -> SSHTestClient {
        try SSHTestHost.checkPlain(folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let client = SSHTestClient(folder: folder)
        try await client.makeKey(named: "user_key")
        return client
    }

    /// Makes a further key pair in the folder, one no host authorizes; returns its path.
    @discardableResult
    package func makeKey(named name: String) async throws -> String {
        let path = folder + "/" + name
        let run = try await ToolRun.run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "skynet-test", "-f", path])
        guard run.exit.succeeded else {
            throw ToolRunError(description: "ssh-keygen \(path): \(run.exit): \(run.stderr)")
        }
        return path
    }

    /// The words of an ssh command for `--ssh-command` (no `-p`: a login names the port; no
    /// BatchMode: the product adds it): `-F /dev/null` and IdentitiesOnly keep `~/.ssh` out.
    /// `hostKeyChecking`: `accept-new` learns a host's key on first login, `yes` refuses an
    /// unknown one.
    package func commandWords(key: String? = nil, hostKeyChecking: String = "accept-new") -> [String] {
        ["ssh", "-F", "/dev/null", "-i", key ?? self.key, "-o", "IdentitiesOnly=yes",
         "-o", "UserKnownHostsFile=\(knownHosts)", "-o", "StrictHostKeyChecking=\(hostKeyChecking)"]
    }

    /// `commandWords` as one line for `--ssh-command` (the folder's path holds no character
    /// a shell would read: `SSHTestHost.checkPlain`).
    package func commandLine(key: String? = nil, hostKeyChecking: String = "accept-new") -> String {
        commandWords(key: key, hostKeyChecking: hostKeyChecking).joined(separator: " ")
    }

    /// The arguments (after `ssh`) of one login to `host` that runs `remote` there, with
    /// BatchMode (a prompt fails instead of hanging the test).
    package func arguments(to host: SSHTestHost, remote: String, key: String? = nil, hostKeyChecking: String = "accept-new") -> [String] {
        Array(commandWords(key: key, hostKeyChecking: hostKeyChecking).dropFirst())
            + ["-o", "BatchMode=yes", "-p", String(host.port), "--", host.address, remote]
    }

    /// Logs in to `host` with ssh and runs `remote` (a line for the login shell), to its end
    /// or for at most `limit`.
    package func run(
        on host: SSHTestHost, _ remote: String, key: String? = nil, hostKeyChecking: String = "accept-new",
        limit: Duration = .seconds(20)
    ) async throws -> ToolRun {
        try await ToolRun.run("ssh", arguments(to: host, remote: remote, key: key, hostKeyChecking: hostKeyChecking), limit: limit)
    }
}
