import Foundation

extension SSHTestHost {
    /// The sshd_config of a test host. Every path is absolute: sshd re-execs itself and reads
    /// the file again.
    static func configuration(
        folder: String, address: String, port: Int, marker: String, skynetOnPath: Bool, perSourcePenalties: Bool
    ) -> String {
        let path = (skynetOnPath ? "\(folder)/bin:" : "") + "/usr/bin:/bin"
        var lines = [
            "ListenAddress \(address):\(port)",
            "HostKey \(folder)/host_key",
            "PidFile none",
            // Absolute, and StrictModes off: under /tmp (mode 1777) sshd would refuse the file.
            "AuthorizedKeysFile \(folder)/authorized_keys",
            "StrictModes no",
            // PAM needs root; keys do not need it.
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            // CI runs as root and logs in as root, with the key; as any other user, sshd
            // admits only that user.
            "PermitRootLogin prohibit-password",
            "MaxStartups 100",
            "AllowTcpForwarding no",
            "X11Forwarding no",
            "PrintMotd no",
            // Applied after sshd's own PATH and HOME (the admin's environment comes last), and
            // inherited by everything a session starts: the marker finds them all.
            "SetEnv PATH=\(path) HOME=\(folder)/home SKYNET_TEST_HOST=\(marker)",
        ]
        // OpenSSH 9.8 and later penalise a source whose logins fail: the wrong-key test would
        // lock 127.0.0.1 out. Older versions refuse the keyword.
        if perSourcePenalties { lines.append("PerSourcePenalties no") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether this sshd knows `PerSourcePenalties` (OpenSSH 9.8 and later), from the version
    /// `sshd -V` prints (older versions print it with their usage).
    static func sshdTakesPerSourcePenalties() async -> Bool {
        guard let run = try? await ToolRun.run(sshdPath, ["-V"], limit: .seconds(10)),
              let version = openSSHVersion(in: run.stderr + run.stdout) else { return false }
        return version >= (9, 8)
    }

    /// `(9, 2)` from text holding `OpenSSH_9.2p1` or `OpenSSH_9.2,`; nil when there is none.
    static func openSSHVersion(in text: String) -> (Int, Int)? {
        guard let start = text.range(of: "OpenSSH_") else { return nil }
        let numbers = text[start.upperBound...].prefix { $0.isNumber || $0 == "." }.split(separator: ".")
        guard numbers.count >= 2, let major = Int(numbers[0]), let minor = Int(numbers[1]) else { return nil }
        return (major, minor)
    }

    /// Refuses a folder path that a config line or an `--ssh-command` would split or a shell
    /// would read (e.g. a TMPDIR with spaces): better a clear error than a confusing login.
    static func checkPlain(_ path: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-")
        guard path.allSatisfy(allowed.contains) else {
            throw SSHTestHostError(description: "the test folder \(path) holds characters other than letters, digits and /._-")
        }
    }
}
