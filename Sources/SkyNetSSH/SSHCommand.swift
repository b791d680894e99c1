import SkyNetRuntime
import SkyNetWork

/// The ssh program and its options (`--ssh-command 'ssh -i ~/.ssh/ci -o …'`): split into words
/// as `sh` would, never run by one. A leading `~/` is the home folder, as in the issue's example.
package struct SSHCommand: Sendable, Equatable {
    package typealias ParseError = CommandTemplate.ParseError

    package let words: [String]

    /// Plain `ssh`: its own config (`~/.ssh/config`) applies as usual.
    package static let standard = SSHCommand(words: ["ssh"])

    package init(words: [String]) {
        self.words = words
    }

    /// Splits `text` into words; `home` (default: `$HOME`) stands for a leading `~`.
    package init(_ text: String, home: String? = nil) throws(ParseError) {
        let home = home ?? ProcessInfo.processInfo.environment["HOME"] ?? "/"
        let words = try CommandTemplate.words(text, home: home)
        guard let program = words.first, !program.isEmpty else {
            throw ParseError(description: "the ssh command is empty: name the ssh program, e.g. 'ssh -i ~/.ssh/ci'")
        }
        self.words = words
    }

    /// The argument vector of one session to `login` running `remote` (program first).
    ///
    /// ssh keeps the first value of an `-o` option, so BatchMode comes before the user's words
    /// (no prompt can ever hang a scan) and the tunables after them (the user's win); of the
    /// flags the last wins, so `-T -a -x` mean no tty, agent or X11 forwarding even after the
    /// user's `-t` or `-A`. No `-q` (it silences the lines a failure is reported with) and no
    /// `-n` (stdin is the channel); `LogLevel=ERROR` drops only "Permanently added …".
    package func arguments(to login: SSHLogin, remote: String, connectTimeout: Duration) -> [String] {
        let seconds = max(1, Int((connectTimeout.seconds).rounded(.up)))
        var arguments = [words[0], "-o", "BatchMode=yes"] + words.dropFirst()
        arguments += ["-T", "-a", "-x", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=\(seconds)",
                      "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "ClearAllForwardings=yes"]
        if let port = login.port { arguments += ["-p", String(port)] }
        if let user = login.user { arguments += ["-l", user] }
        return arguments + ["--", login.host, remote]
    }

    /// The command an operator can run to check a login by hand: `ssh gpu1 true` by default.
    package func checkHint(for login: SSHLogin) -> String {
        var words = words.map(Self.quotedForDisplay)
        if let port = login.port { words += ["-p", String(port)] }
        words.append((login.user.map { $0 + "@" } ?? "") + login.host)
        return (words + ["true"]).joined(separator: " ")
    }

    /// A word as a shell reads it back: as is when plain, else in single quotes.
    static func quotedForDisplay(_ word: String) -> String {
        let plain = !word.isEmpty && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:@,+%".contains($0)) }
        return plain ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: #"'\''"#) + "'"
    }
}
