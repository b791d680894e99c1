import SkyNetOptions
import SkyNetRuntime
import SkyNetWire

/// The cluster's shared secret, as the command line gives it: `--token-file FILE` if given,
/// else `SKYNET_TOKEN` from the environment. Never an argument: argv is visible to every user
/// of the machine in `ps`.
struct ClusterToken {
    static let minimumBytes = 16
    static let maximumBytes = 4096
    static let advice = "make one with: openssl rand -hex 32"

    let value: String
    /// The file it was read from, as an absolute path: spawned nodes are given the file, so the
    /// token enters no environment and no argument list it was not already in.
    let file: String?

    /// The token `args` and the environment give, checked; nil when neither gives one.
    static func load(_ args: Arguments) throws(UsageError) -> ClusterToken? {
        if let path = args.string("token-file") {
            let value = try contents(of: path)
            try check(value, source: "the token in \(path)")
            return ClusterToken(value: value, file: URL(fileURLWithPath: path).standardizedFileURL.path)
        }
        guard let value = ProcessInfo.processInfo.environment["SKYNET_TOKEN"] else { return nil }
        // Set but empty is a mistake (`SKYNET_TOKEN=$(cat missing-file)`), not a wish to run open.
        guard !value.isEmpty else {
            throw UsageError("SKYNET_TOKEN is set but empty: give it the cluster's token, or unset it to run without one")
        }
        try check(value, source: "SKYNET_TOKEN")
        return ClusterToken(value: value, file: nil)
    }

    private static func check(_ value: String, source: String) throws(UsageError) {
        let count = value.utf8.count
        guard count >= minimumBytes else {
            throw UsageError("\(source) is \(count) bytes long: a token must be at least \(minimumBytes) bytes, "
                             + "so that it cannot be guessed (\(advice))")
        }
        guard count <= maximumBytes else { throw UsageError("\(source) is longer than \(maximumBytes) bytes") }
        // A stray space, tab or second line would make a token that only looks like the others'.
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw UsageError("\(source) holds a control character (a tab, a second line, …): a token is one line of printable text")
        }
        // A byte order mark an editor saved, a zero-width space, a C1 control: invisible, so two
        // tokens that look alike would differ.
        if let invisible = value.unicodeScalars.first(where: { Request.isUnprintable($0) }) {
            let code = String(invisible.value, radix: 16, uppercase: true)
            throw UsageError("\(source) holds an invisible character (U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code)"
                             + "\(invisible == "\u{FEFF}" ? ", a byte order mark" : "")): a token is one line of printable text")
        }
        guard value.first?.isWhitespace == false, value.last?.isWhitespace == false else {
            throw UsageError("\(source) begins or ends with a space: remove it (spaces count, and another copy of the token may not have them)")
        }
    }

    /// Whether `path`, opened as `opened`, is a file directly in `$CREDENTIALS_DIRECTORY`, where
    /// systemd put the credentials of the service it started us as: its folder is that one (links
    /// to it resolved), and the entry there is that very file, not a link to one elsewhere.
    private static func isCredential(_ path: String, opened: stat) -> Bool {
        guard let directory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"], directory.hasPrefix("/") else { return false }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        guard let folder = resolved(url.deletingLastPathComponent().path), folder == resolved(directory) else { return false }
        var entry = stat()
        guard lstat(folder + "/" + url.lastPathComponent, &entry) == 0, entry.st_mode & S_IFMT == S_IFREG else { return false }
        return entry.st_dev == opened.st_dev && entry.st_ino == opened.st_ino
    }

    /// `path` with every link resolved, or nil when it cannot be.
    private static func resolved(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    /// The file's text without its final newline. Refused unless it is a regular file that only
    /// its owner can read: a token others can read is no secret.
    private static func contents(of path: String) throws(UsageError) -> String {
        // Non-blocking, so a FIFO given by mistake cannot hang the open.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw UsageError("cannot read --token-file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw UsageError("--token-file \(path) is not a regular file")
        }
        let mode = info.st_mode & 0o777
        // systemd gives a service its credential (LoadCredential=) with an ACL entry for the
        // service's user alone, and `stat` shows the ACL's mask as group read (0440). In the
        // credentials directory that bit is no group's; any other bit still refuses the file.
        let refused: mode_t = isCredential(path, opened: info) ? 0o037 : 0o077
        guard mode & refused == 0 else {
            throw UsageError("refusing --token-file \(path): its group or others have access to it (mode \(String(mode, radix: 8))); "
                             + "run: chmod 600 \(path)")
        }
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 2)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress.map { $0 + count }, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw UsageError("cannot read --token-file \(path): \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            count += got
        }
        var text = bytes[..<count]
        if text.last == 0x0A { text = text.dropLast() }
        if text.last == 0x0D { text = text.dropLast() }
        guard let value = String(validating: text, as: UTF8.self) else {
            throw UsageError("the token in \(path) is not UTF-8 text")
        }
        guard !value.isEmpty else { throw UsageError("--token-file \(path) is empty (\(advice))") }
        return value
    }
}
