import SkyNetRuntime

/// The one string ssh hands to the host's login shell. It holds only fixed text and hex: the
/// node's arguments travel as `--stdio-args HEX` (the UTF-8 of the arguments joined by NUL),
/// so no text of the operator's is ever parsed by a shell, whichever one the login has (fish
/// and csh quote otherwise than sh; GNU parallel encodes its remote commands for this reason).
public enum RemoteCommand {
    /// A remote command that is too long for a host's shell to take (`sh -c` gets one argument
    /// of at most 128 KiB on Linux).
    public struct TooLong: Error, CustomStringConvertible, Sendable {
        public let bytes: Int
        public var description: String {
            "the node's arguments make a remote command of \(bytes) bytes, more than \(RemoteCommand.maxBytes): declare fewer or shorter jobs"
        }
    }

    /// The longest remote command sent.
    public static let maxBytes = 100 * 1024

    /// `exec skynet node --stdio [--stdio-args HEX]`: the node found on the host's PATH.
    public static func plain(arguments: [String]) throws(TooLong) -> String {
        try checked("exec skynet node --stdio" + stdioArguments(arguments))
    }

    /// ` --stdio-args HEX`, or nothing for no arguments.
    static func stdioArguments(_ arguments: [String]) -> String {
        arguments.isEmpty ? "" : " --stdio-args " + Secrets.hex(Array(arguments.joined(separator: "\0").utf8))
    }

    static func checked(_ command: String) throws(TooLong) -> String {
        guard command.utf8.count <= maxBytes else { throw TooLong(bytes: command.utf8.count) }
        return command
    }
}
