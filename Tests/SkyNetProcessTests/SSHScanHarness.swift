import Foundation
@testable import SkyNet
import SkyNetLocalHosts
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWire

/// What the end-to-end SSH suites share: a folder of inputs, a `skynet` coordinator whose
/// every process on this side (its ssh clients, its group keeper) can be found and killed,
/// and readers of what a scan printed.
enum SSHScanHarness {
    /// A JSON event (the test support's reading, not the product's).
    typealias Event = SkyNetTestSupport.JSONValue

    /// A helper that did not run as the test needed.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Makes a folder, runs `body` with it, removes it on every path.
    static func withFolder<T>(_ body: (String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-sshscan-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try await body(folder)
    }

    /// Names a shell would read otherwise than as text (quotes, `$(…)`, a backslash, a glob,
    /// UTF-8): each must reach the job as one argument, unchanged.
    static let awkwardNames = [#"it's $(echo no) "quoted".jpg"#, #"back\slash *.jpg"#, "café ☕ ;&|.jpg"]

    /// Writes `count` files of random bytes (sizes 1 to ~64 KiB; names with a space, the first
    /// few `awkwardNames`: no shell may split them) into `folder`, and their list as
    /// `inputs.txt`; returns the list's path and the files in list order.
    static func randomFiles(_ count: Int, in folder: String) throws -> (list: String, files: [String]) {
        var generator = SystemRandomNumberGenerator()
        let files = try (1...count).map { index in
            let path = "\(folder)/" + (index <= awkwardNames.count ? awkwardNames[index - 1] : "photo \(index).jpg")
            let bytes = (0..<Int.random(in: 1...65_536, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        return (try lines(files, in: folder), files)
    }

    /// Writes `lines` as `inputs.txt` in `folder`; returns its path.
    static func lines(_ lines: [String], in folder: String) throws -> String {
        let path = folder + "/inputs.txt"
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// What `sha256sum` prints here for `files`, in their order: what the hosts must print.
    static func localSums(_ files: [String]) async throws -> String {
        let run = try await ToolRun.run("sha256sum", files, limit: .seconds(30))
        guard run.exit.succeeded else { throw Failure(description: "sha256sum: \(run.exit): \(run.stderr)") }
        return run.stdout
    }

    /// The `completed` column of the summary table (stderr) per system named in it.
    static func completedBySystem(_ stderr: String) -> [String: Int] {
        let lines = stderr.split(separator: "\n").map(String.init)
        guard let header = lines.lastIndex(where: { $0.hasPrefix("system ") && $0.contains("completed") }) else { return [:] }
        var table: [String: Int] = [:]
        for line in lines[(header + 1)...] {
            let cells = line.split(separator: " ")
            guard cells.count >= 2, let completed = Int(cells[1]) else { break }
            table[String(cells[0])] = completed
        }
        return table
    }

    /// The JSON events of a `--json` scan's stdout (a line that is no JSON object fails the test's reading).
    static func events(_ stdout: String) throws -> [Event] {
        try stdout.split(separator: "\n").map { try JSONDecoder().decode(Event.self, from: Data($0.utf8)) }
    }

    /// The events named `name` (of `system`, when given).
    static func events(_ name: String, of system: String? = nil, in events: [Event]) -> [Event] {
        events.filter { $0["event"]?.string == name && (system == nil || $0["system"]?.string == system) }
    }

    /// A predicate on a `--json` line: the event `name` (of `system`, when given).
    static func isEvent(_ name: String, of system: String? = nil) -> @Sendable (String) -> Bool {
        { line in
            guard let event = try? JSONDecoder().decode(Event.self, from: Data(line.utf8)) else { return false }
            return event["event"]?.string == name && (system == nil || event["system"]?.string == system)
        }
    }
}

/// A `skynet` command running in the background with an environment entry of its own, which
/// every process it starts inherits: after a SIGKILL, whatever it left on this side (an ssh
/// client, a group keeper) is still found. `stop()` kills them all; `withCoordinator` calls it
/// on every path.
final class MarkedCoordinator: Sendable {
    let process: RunningProcess
    /// `SKYNET_TEST_COORDINATOR=<uuid>`.
    let entry: String

    init(_ arguments: [String]) throws {
        let marker = UUID().uuidString
        entry = "SKYNET_TEST_COORDINATOR=\(marker)"
        process = try RunningProcess(arguments, environment: ["SKYNET_TEST_COORDINATOR": marker])
    }

    /// The live processes of this coordinator and of everything it started here.
    func processes() -> [Int32] { HostProcesses.carrying(entry) }

    /// `processes()` once empty, or what is left after `timeout` (polled: nothing announces it).
    func processesLeft(within timeout: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        var left = processes()
        while !left.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            left = processes()
        }
        return left
    }

    /// Kills the coordinator and everything it started here; waits (at most 5 s) for them to go.
    func stop() async {
        process.kill()
        let killed = HostProcesses.freezeAndKill { processes() }
        await HostProcesses.awaitGone(killed, within: .seconds(5))
    }
}

/// Starts `skynet arguments` marked, runs `body`, and stops it (and all it started) on every path.
func withCoordinator<T>(_ arguments: [String], _ body: (MarkedCoordinator) async throws -> T) async throws -> T {
    let coordinator = try MarkedCoordinator(arguments)
    do {
        let result = try await body(coordinator)
        await coordinator.stop()
        return result
    } catch {
        await coordinator.stop()
        throw error
    }
}

/// The pids of `hosts` still running after `timeout` (one deadline shared by all), per host's login.
func processesLeft(on hosts: [SSHTestHost], within timeout: Duration) async -> [String: [Int32]] {
    let deadline = ContinuousClock.now + timeout
    var left: [String: [Int32]] = [:]
    for host in hosts {
        let remaining = max(.zero, deadline - ContinuousClock.now)
        let pids = await host.processesLeft(within: remaining)
        if !pids.isEmpty { left[host.login] = pids }
    }
    return left
}

extension Array where Element == Int32 {
    /// `1234 sleep, 1240 skynet` for a failing test's message.
    var described: String {
        map { pid in "\(pid) \(HostProcesses.read(pid)?.name ?? "?")" }.joined(separator: ", ")
    }
}
