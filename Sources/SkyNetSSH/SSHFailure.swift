import SkyNetRuntime

/// Why an ssh session to a host ended, in ssh's own words and with the fix: made from ssh's
/// exit status and the last lines it (or the remote shell) wrote to stderr.
package struct SSHFailure: Error, CustomStringConvertible, Equatable, Sendable {
    package enum Kind: Sendable, Equatable {
        /// The login was refused (no key the host takes), or its stdout did not start with the
        /// protocol (start-up files that print, a first line over the limit).
        case login
        /// The host's key is unknown or has changed.
        case hostKey
        /// Not reached: refused, unresolved, timed out. Tried again with backoff.
        case unreachable
        /// The host has no `skynet` on its PATH (or one that cannot start).
        case noSkynet
        /// `--ship`: the host is another OS or architecture than this build.
        case otherPlatform
        /// `--ship`: the host lacks this build; the upload follows (never printed).
        case needsShipment
        /// `--ship`: the host's copy was not this build (its SHA-256 differs), or not the login's
        /// own regular file (a symbolic link, another user's), and was removed unrun; the upload
        /// follows, said once per host (`ClusterEvent.shippingAgain`).
        case copyMismatch
        /// `--ship`: the uploaded copy did not have the right hash. Tried again with backoff.
        case shipFailed
        /// `--ship`: the host cannot keep the copy (`~/.cache` is no folder it can write) or
        /// cannot run it (a noexec home, a loader that finds no libraries). Shipping it again
        /// cannot help.
        case cannotShip
        /// ssh exited with status 0: the node ended the session (its own words, if any, follow).
        case ended
        /// ssh (or the node) ended otherwise.
        case exited
        /// ssh ran, but no welcome came in time (the link then stopped ssh).
        case noAnswer
    }

    package let kind: Kind
    /// What went wrong, one line: `ssh: Permission denied (publickey)`.
    package let reason: String
    /// What to do about it: `check the login with: ssh gpu1 true`.
    package let fix: String

    package init(kind: Kind, reason: String, fix: String) {
        self.kind = kind
        self.reason = reason
        self.fix = fix
    }

    package var description: String { fix.isEmpty ? reason : "\(reason) — \(fix)" }

    /// Whether asking again soon cannot help (it waits as long as a refused hello).
    package var isPermanent: Bool {
        switch kind {
        case .login, .hostKey, .noSkynet, .otherPlatform, .cannotShip: true
        case .unreachable, .needsShipment, .copyMismatch, .shipFailed, .ended, .exited, .noAnswer: false
        }
    }

    /// Exit statuses of the remote commands of `--ship` (RemoteCommand).
    static let otherPlatformStatus: Int32 = 120
    static let needsShipmentStatus: Int32 = 121
    static let shipFailedStatus: Int32 = 122
    /// The intact copy of this build does not start there (its `skynet --ship:` line says why).
    static let doesNotRunStatus: Int32 = 123
    /// The cache folder is refused (a symbolic link, another user's, a directory at the copy's
    /// name: the `skynet --ship:` line says which) or cannot be made or made 0700 (mkdir's or
    /// chmod's line says why).
    static let cannotStoreStatus: Int32 = 124
    /// The cached copy is not this build, or not the login's own regular file: removed unrun
    /// (its `skynet --ship:` line gives its hash, or what it was).
    static let copyMismatchStatus: Int32 = 125

    /// The fix for a shipped copy that cannot start, by the reason the host gave.
    static let staticBuildFix = "ship a static build: swift build -c release --static-swift-stdlib"
    static let linkedCacheFix = "--ship keeps its copy only in a folder of its own: remove the link ~/.cache/skynet on that host (what it points to is left as it is)"
    static let othersCacheFix = "--ship keeps its copy only in a folder the login owns: remove ~/.cache/skynet on that host, or make the login's user its owner"
    static let directoryCopyFix = "--ship keeps its copy as a file: remove that directory on that host"
    static let noexecFix = "the host does not run programs from ~/.cache (mounted noexec?): install skynet on its PATH there and leave out --ship"

    /// Classifies how ssh ended. `lastLine`: the last non-empty line of its stderr; `lines`: the
    /// last lines kept (newest last; when given, the line that says what went wrong is picked
    /// from them: a login shell may end its error with a caret line, as fish does); `host`: the
    /// login's host (cut off the front of a line); `checkHint`: the command to check the login.
    package static func classify(exit: ChildExit, lastLine: String?, host: String, checkHint: String,
                                lines: [String] = []) -> SSHFailure {
        let kept = lines.isEmpty ? (lastLine.map { [$0] } ?? []) : lines
        // ssh's own line and a node's last words are its newest; a remote shell's error may come
        // before the lines that quote and mark the command.
        let newest = kept.last { !$0.isEmpty } ?? ""
        let line = meaningfulLine(kept) ?? ""
        let check = "check the login with: \(checkHint)"
        switch exit.reason {
        case .exited(255):
            let reason = newest.isEmpty ? "ssh exited with status 255" : normalised(newest, host: host)
            let line = newest
            if line.contains("Permission denied") { return SSHFailure(kind: .login, reason: reason, fix: check) }
            if line.contains("Host key verification failed") || line.contains("IDENTIFICATION HAS CHANGED") {
                return SSHFailure(kind: .hostKey, reason: reason, fix: check)
            }
            return SSHFailure(kind: .unreachable, reason: reason, fix: check)
        case .exited(126), .exited(127):
            return noSkynet(line.isEmpty ? "skynet: not found (\(exit))" : line)
        case .exited(1) where line.hasSuffix("Command not found."):
            // tcsh's `skynet: Command not found.`
            return noSkynet(line)
        case .exited(otherPlatformStatus) where line.hasPrefix("skynet --ship:"):
            return SSHFailure(kind: .otherPlatform, reason: line,
                              fix: "--ship copies this \(LocalPlatform.name) build only: build skynet on that host")
        case .exited(needsShipmentStatus):
            return SSHFailure(kind: .needsShipment, reason: line.hasPrefix("skynet --ship:") ? line : "no copy of this build", fix: "")
        case .exited(copyMismatchStatus) where line.hasPrefix("skynet --ship:"):
            return SSHFailure(kind: .copyMismatch, reason: line, fix: "")
        case .exited(shipFailedStatus) where line.hasPrefix("skynet --ship:"):
            return SSHFailure(kind: .shipFailed, reason: line, fix: "retrying")
        case .exited(doesNotRunStatus) where line.hasPrefix("skynet --ship:"):
            return SSHFailure(kind: .cannotShip, reason: line,
                              fix: line.contains("cannot be executed") || line.contains("Permission denied") ? noexecFix
                                  : line.contains("error while loading shared libraries") ? staticBuildFix
                                  : "build skynet on that host and install it on its PATH, or \(staticBuildFix)")
        case .exited(cannotStoreStatus) where line.hasPrefix("skynet --ship:"):
            return SSHFailure(kind: .cannotShip, reason: line,
                              fix: line.hasSuffix(": it is a symbolic link") ? linkedCacheFix
                                  : line.hasSuffix(": it is a directory") ? directoryCopyFix : othersCacheFix)
        case .exited(cannotStoreStatus):
            return SSHFailure(kind: .cannotShip, reason: "skynet --ship: cannot keep the copy" + (line.isEmpty ? "" : ": \(line)"),
                              fix: "--ship keeps its copy in ~/.cache/skynet on the host: make that a folder it can write")
        case .exited(0):
            return SSHFailure(kind: .ended, reason: "skynet node ended the session" + (newest.isEmpty ? "" : ": \(newest)"), fix: "")
        case .exited(let status):
            return SSHFailure(kind: .exited, reason: "ssh exited with status \(status)" + (line.isEmpty ? "" : ": \(line)"), fix: "")
        case .signalled:
            return SSHFailure(kind: .exited, reason: "ssh \(exit)", fix: "")
        }
    }

    static func noSkynet(_ reason: String) -> SSHFailure {
        SSHFailure(kind: .noSkynet, reason: reason,
                   fix: "install skynet on its PATH (swift build -c release --static-swift-stdlib), or give --ship")
    }

    /// The line of `lines` (newest last) that says what went wrong: the newest naming a missing
    /// command, a loader's or exec's error, a `skynet --ship:` reason or an `error:`; else the
    /// newest that is more than a marker (fish underlines the word it means with `^~~~^`).
    static func meaningfulLine(_ lines: [String]) -> String? {
        let markers = ["skynet --ship:", "not found", "Command not found", "Unknown command", "error while loading shared libraries",
                       "Exec format error", "cannot execute", "Permission denied", "No such file or directory", "error:"]
        let meaningful = lines.filter { line in line.contains { !$0.isWhitespace && $0 != "^" && $0 != "~" } }
        return meaningful.last { line in markers.contains { line.contains($0) } } ?? meaningful.last
    }

    /// ssh's line as a reason: `ssh: …` kept; else a leading `user@host: ` or `host: ` cut, one
    /// trailing `.` dropped and `ssh: ` put in front (`root@127.0.0.1: Permission denied
    /// (publickey).` → `ssh: Permission denied (publickey)`).
    static func normalised(_ line: String, host: String) -> String {
        if line.hasPrefix("ssh: ") { return line }
        var text = Substring(line)
        if let colon = text.firstRange(of: ": ") {
            let head = text[..<colon.lowerBound]
            let who = head.split(separator: "@", maxSplits: 1).last.map(String.init) ?? ""
            if who == host || who == "[\(host)]" || head == host { text = text[colon.upperBound...] }
        }
        if text.hasSuffix(".") { text = text.dropLast() }
        return "ssh: " + text
    }
}
