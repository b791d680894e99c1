import SkyNetOptions

/// Where a server of ours listens, as `--dashboard` and `--metrics` take it: `[HOST:]PORT`,
/// 127.0.0.1 unless a host is given (`[::1]:PORT` for IPv6); port 0 picks a free one.
struct ListenAddress: Equatable {
    let host: String
    let port: Int

    /// Parses the value of `--OPTION`; the usage error names the option.
    static func parse(_ text: String, option: String) throws(UsageError) -> ListenAddress {
        let usage = "option '--\(option)' wants [HOST:]PORT (e.g. 8080, 0 for a free port, 0.0.0.0:8080), not '\(text)'"
        var host = "127.0.0.1"
        var portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }  // [::1]:8080
            guard !host.isEmpty, host.utf8.count <= 255, !host.contains(where: { $0.isWhitespace || $0 == "/" }) else {
                throw UsageError(usage)
            }
        }
        guard let port = Int(portText), (0...65535).contains(port) else { throw UsageError(usage) }
        return ListenAddress(host: host, port: port)
    }
}
