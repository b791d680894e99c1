import SkyNetRuntime

/// The one string ssh hands to the host's login shell. It holds only fixed text and hex: the
/// node's arguments travel as `--stdio-args HEX` (the UTF-8 of the arguments joined by NUL),
/// so no text of the operator's is ever parsed by a shell, whichever one the login has (fish
/// and csh quote otherwise than sh; GNU parallel encodes its remote commands for this reason).
package enum RemoteCommand {
    /// A remote command that is too long for a host's shell to take (`sh -c` gets one argument
    /// of at most 128 KiB on Linux).
    package struct TooLong: Error, CustomStringConvertible, Sendable {
        package let bytes: Int
        package var description: String {
            "the node's arguments make a remote command of \(bytes) bytes, more than \(RemoteCommand.maxBytes): declare fewer or shorter jobs"
        }
    }

    /// The longest remote command sent.
    package static let maxBytes = 100 * 1024

    /// `exec skynet node --stdio [--stdio-args HEX]`: the node found on the host's PATH.
    package static func plain(arguments: [String]) throws(TooLong) -> String {
        try checked("exec skynet node --stdio" + stdioArguments(arguments))
    }

    /// `--ship`: checks the host's `uname -sm` (else exit 120 with the reason) and the cache
    /// folder (`cacheFolder`: else exit 124), makes the folder 0700 (chmod failing: exit 124
    /// with its line), then looks at the copy of this build in it: none, exit 121 (the upload
    /// follows); a directory, exit 124 (`directoryRefused`). Only a regular file the login owns,
    /// not a symbolic link, is used: anything else there is removed unrun, exit 125 saying what
    /// it was (shipped again, and said). The copy is checked by path and run by path, so those
    /// must be the same file: in a folder others may write to, another user could put at the
    /// name a link to a correct copy of their own, and put another program in its place once
    /// its hash has been read. The folder is the login's and no link (`cacheFolder`), so once it
    /// is 0700 no one but the login (and root) can put anything at the name, and a copy that is
    /// the login's own file, not a link, cannot be swapped for another between the checks and
    /// the exec. Its SHA-256 is checked before each use (one read of the copy, over the same
    /// login): a copy that is not this build (replaced, damaged, cut short; such a copy may
    /// still start) is removed unrun, exit 125 with its hash. The intact copy, the login's own,
    /// is made executable (`chmod 700`: one that lost its x bit is not a noexec home) and execed
    /// once it starts (`--version`, its cheapest run); one that still cannot be executed, or
    /// does not start, cannot run on this host (a noexec home, missing libraries): exit 123
    /// with the reason, as shipping it again cannot help. PATH is never used, so no other build
    /// can run. The script holds no `'`, `\` or newline, so `exec /bin/sh -c '…'` reads the same
    /// in every login shell.
    package static func shipped(_ shipment: SSHShipment, arguments: [String]) throws(TooLong) -> String {
        let hex = shipment.sha256
        let script = #"p=$(uname -sm); [ "$p" = "\#(shipment.platform)" ] || { echo "skynet --ship: this host is $p, not \#(shipment.platform)" >&2; exit \#(SSHFailure.otherPlatformStatus); }; "#
            + cacheFolder
            + #"[ -d "$d" ] || exit \#(SSHFailure.needsShipmentStatus); chmod 700 "$d" || exit \#(SSHFailure.cannotStoreStatus); "#
            + #"f="$d/skynet-\#(hex)"; [ ! -L "$f" ] || { rm -f "$f"; echo "skynet --ship: the copy $f is a symbolic link" >&2; exit \#(SSHFailure.copyMismatchStatus); }; "#
            + #"[ -e "$f" ] || exit \#(SSHFailure.needsShipmentStatus); "# + directoryRefused
            + #"[ -f "$f" ] || { rm -f "$f"; echo "skynet --ship: the copy $f is not a regular file" >&2; exit \#(SSHFailure.copyMismatchStatus); }; "#
            + #"[ -O "$f" ] || { set -- $(ls -ld "$f"); rm -f "$f"; "#
            + #"echo "skynet --ship: the copy $f is owned by $3, not by $(id -un)" >&2; exit \#(SSHFailure.copyMismatchStatus); }; "#
            + #"s=$(sha256sum "$f" 2>/dev/null || shasum -a 256 "$f"); s=${s%% *}; "#
            + #"[ "$s" = \#(hex) ] || { rm -f "$f"; echo "skynet --ship: the copy $f does not match this build: its SHA-256 is $s" >&2; exit \#(SSHFailure.copyMismatchStatus); }; "#
            + #"chmod 700 "$f"; if [ -x "$f" ]; then e=$("$f" --version 2>&1 </dev/null >/dev/null) && exec "$f" node --stdio\#(stdioArguments(arguments)); "#
            + #"r=$?; e=$(printf %s "$e" | tail -n 1); [ -n "$e" ] || e="$f --version exits with status $r"; "#
            + #"else e="the copy $f is there but cannot be executed"; fi; "#
            + #"echo "skynet --ship: this build does not run on this host: $e" >&2; exit \#(SSHFailure.doesNotRunStatus)"#
        return try checked("exec /bin/sh -c '\(script)'")
    }

    /// `--ship`'s upload: stdin (this executable) goes to a temporary file in the cache folder,
    /// whose SHA-256 must be the build's (else exit 122 with what it was); then it is renamed
    /// onto its final name, atomically, so no partial or unverified file ever bears it. The
    /// temporary file goes on every end, a signal's too (a session gone mid-copy: SIGHUP, or
    /// SIGPIPE on the error line; sh runs no EXIT trap when a signal kills it). A cache folder
    /// refused by `cacheFolder`, or that cannot be made: exit 124 with the reason (mkdir's line).
    /// `mv` onto a directory, or a link to one, would move the file into it: a link at the
    /// name is removed first (a file there is replaced by the rename itself), and a directory
    /// refused (`directoryRefused`) before anything is read. The folder is 0700 by then, so
    /// only the login can put something at the name meanwhile.
    /// (A `$HOME` holding spaces is not supported: `trap` rereads the path.)
    package static func upload(_ shipment: SSHShipment) -> String {
        let hex = shipment.sha256
        let script = "set -e; " + cacheFolder + #"mkdir -p "$d" || exit \#(SSHFailure.cannotStoreStatus); chmod 700 "$d"; "#
            + #"f="$d/skynet-\#(hex)"; "# + directoryRefused
            + #"t=$(mktemp "$d/.skynet-\#(hex).XXXXXX"); "#
            + #"trap "rm -f $t" EXIT; trap "exit 129" HUP; trap "exit 130" INT; trap "exit 141" PIPE; trap "exit 143" TERM; "#
            + #"cat > "$t"; s=$(sha256sum "$t" 2>/dev/null || shasum -a 256 "$t"); "#
            + #"[ "${s%% *}" = \#(hex) ] || { rm -f "$t"; echo "skynet --ship: the copy has SHA-256 ${s%% *}, not \#(hex)" >&2; exit \#(SSHFailure.shipFailedStatus); }; "#
            + #"chmod 700 "$t"; [ ! -L "$f" ] || rm -f "$f"; mv -f "$t" "$f"; trap - EXIT"#
        return "exec /bin/sh -c '\(script)'"
    }

    /// Sets `d` to the cache folder, `~/.cache/skynet`, and refuses one that is a symbolic link
    /// or that another user owns: exit 124 with the reason. `chmod 700` on a link changes the
    /// mode of the folder it points to, and a copy in a folder of someone else's is theirs to
    /// replace; a refused folder is left as it is. (`~/.cache` itself may be a link.)
    static let cacheFolder = #"d="$HOME/.cache/skynet"; "#
        + #"[ ! -L "$d" ] || { echo "skynet --ship: cannot keep the copy in $d: it is a symbolic link" >&2; exit \#(SSHFailure.cannotStoreStatus); }; "#
        + #"[ ! -e "$d" ] || [ -O "$d" ] || { set -- $(ls -ld "$d"); "#
        + #"echo "skynet --ship: cannot keep the copy in $d: it is owned by $3, not by $(id -un)" >&2; exit \#(SSHFailure.cannotStoreStatus); }; "#

    /// Refuses a directory at the copy's name `f` (not a link to one: that is removed and
    /// replaced): exit 124 with the reason. It may hold the login's files, so it is left as it is.
    static let directoryRefused = #"[ -L "$f" ] || [ ! -d "$f" ] || { echo "skynet --ship: cannot keep the copy as $f: it is a directory" >&2; exit \#(SSHFailure.cannotStoreStatus); }; "#

    /// ` --stdio-args HEX`, or nothing for no arguments.
    static func stdioArguments(_ arguments: [String]) -> String {
        arguments.isEmpty ? "" : " --stdio-args " + Secrets.hex(Array(arguments.joined(separator: "\0").utf8))
    }

    static func checked(_ command: String) throws(TooLong) -> String {
        guard command.utf8.count <= maxBytes else { throw TooLong(bytes: command.utf8.count) }
        return command
    }
}
