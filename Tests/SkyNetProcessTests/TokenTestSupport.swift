import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime

/// A folder only its owner can enter, for token and cluster files; removed when dropped.
final class TokenScratch {
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// Writes `text` to a file of `mode` (exactly, whatever the umask) and returns its path.
    func tokenFile(_ text: String, named name: String = "token", mode: mode_t = 0o600) throws -> String {
        let path = path(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        guard chmod(path, mode) == 0 else { throw CocoaError(.fileWriteNoPermission) }
        return path
    }

    /// A cluster file naming `nodes` on 127.0.0.1.
    func clusterFile(_ nodes: [(name: String, port: Int)], named name: String = "cluster.json") throws -> String {
        let entries = nodes.map { ["name": $0.name, "host": "127.0.0.1", "port": $0.port] as [String: Any] }
        let path = path(name)
        try JSONSerialization.data(withJSONObject: ["nodes": entries]).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The arguments and environment that give `token` by `source` (a 0600 file, or SKYNET_TOKEN).
    func give(_ token: String, by source: ProcessTests.TokenHygieneTests.Source) throws -> (arguments: [String], environment: [String: String]) {
        switch source {
        case .file: (["--token-file", try tokenFile(token + "\n")], [:])
        case .environment: ([], ["SKYNET_TOKEN": token])
        }
    }

    /// `skynet node`, `scan` and `status`, each with `--token-file FILE` when given. They must
    /// fail before they connect anywhere; if one did not, the scan and status would find a
    /// closed port and the node would run until the test's limit.
    func commands(tokenFile: String?) throws -> [[String]] {
        let cluster = try clusterFile([("beta", try freePort())], named: "commands-cluster.json")
        let token = tokenFile.map { ["--token-file", $0] } ?? []
        return [
            ["node", "--port", "0"] + token,
            ["scan", "--cluster", cluster, "--total", "1", "--duration", "0", "--quiet"] + token,
            ["status", "--cluster", cluster, "--timeout", "1"] + token,
        ]
    }

    /// 40 random letters and digits: no 8-byte piece of it turns up in other text by chance.
    static func randomToken() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<40).map { _ in alphabet.randomElement(using: &generator) ?? "x" })
    }

    /// Whether `text` holds any 8-byte piece of `token`.
    static func leaks(_ token: String, into text: String) -> Bool {
        let bytes = Array(token.utf8), haystack = Array(text.utf8)
        guard bytes.count >= 8 else { return haystack.contains(bytes) }
        return (0...(bytes.count - 8)).contains { start in haystack.contains(bytes[start..<(start + 8)]) }
    }
}

/// A `skynet node` on 127.0.0.1 and port 0 whose stdout and stderr the test reads; killed when
/// dropped, so that no path of a test leaves it running.
struct SkynetNode {
    let process: RunningProcess
    let port: Int
    var pid: Int32 { process.pid }

    /// Starts `skynet node --port 0 --name NAME ARGUMENTS…` (`environment` added to ours) and
    /// waits for its `listening on` line.
    static func start(name: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> SkynetNode {
        let process = try RunningProcess(["node", "--port", "0", "--name", name] + arguments, environment: environment)
        let line = try await process.waitForLine(timeout: .seconds(15)) { $0.hasPrefix("listening on ") }
        let port = try #require(parseListening(line)?.1, "\(line)")
        return SkynetNode(process: process, port: port)
    }

    /// Stops it with SIGTERM and returns all it printed.
    func stop() async throws -> Finished {
        process.send(SIGTERM)
        return try await process.finish(timeout: .seconds(20))
    }
}

/// What /proc says about a process.
enum ProcInfo {
    /// The processes whose parent is `pid`.
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { candidate in
            // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
            guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
    }

    /// The argument list, from /proc/PID/cmdline.
    static func commandLine(of pid: Int32) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
    }

    /// The environment, from /proc/PID/environ, as one text.
    static func environment(of pid: Int32) -> String {
        FileManager.default.contents(atPath: "/proc/\(pid)/environ").map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
