import Foundation
import SkyNetTestSupport
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// What the multi-process suites of files that travel share: a scratch folder with
/// the scan's working directory and the nodes' work directories in it, a scan run from a
/// directory of the test's choosing (relative inputs and returns are relative to it), and
/// bounded polls of what nodes leave on disk.
enum TransferHarness {
    /// Makes a folder, runs `body` with its path, removes it on every path.
    static func withFolder<T>(_ body: (String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-transfer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try await body(folder)
    }

    /// Makes `path` (and its parents) and returns it.
    @discardableResult
    static func makeFolder(_ path: String) throws -> String {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Writes `lines` (one input a line) at `path`; returns it.
    @discardableResult
    static func writeList(_ lines: [String], at path: String) throws -> String {
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A token file in `scratch` (0600, a fresh random token).
    static func tokenFile(_ scratch: TokenScratch) throws -> String {
        try scratch.tokenFile(TokenScratch.randomToken() + "\n")
    }

    /// Runs `skynet ARGUMENTS…` to its end with `directory` as its working directory (where
    /// relative inputs are read and relative returns written), `environment` added to ours,
    /// killed after `limit`. Its output goes to a folder of its own, not into `directory`.
    static func run(in directory: String, _ arguments: [String], environment: [String: String] = [:],
                    limit: Duration = .seconds(120)) async throws -> Finished {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-transfer-out-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: output) }
        var options = ChildProcess.Options(arguments: arguments,
                                           environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        options.stdout = .file(output + "/out", append: false)
        options.stderr = .file(output + "/err", append: false)
        options.workingDirectory = directory
        let spawnOptions = options
        let child = try await onOwnThread(named: "test-spawn") { try ChildProcess.spawn(skynetBinary.path, spawnOptions) }
        do {
            _ = try await withTimeout(limit) { await child.exit.value }
        } catch {
            await child.stop(grace: .zero)
            throw error
        }
        return Finished(status: await child.exit.value.status,
                        stdout: (try? String(contentsOfFile: output + "/out", encoding: .utf8)) ?? "",
                        stderr: (try? String(contentsOfFile: output + "/err", encoding: .utf8)) ?? "")
    }

    /// The node roots (`skynet-node-<pid>-XXXXXX`) in `directory`.
    static func nodeRoots(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("skynet-node-") }
    }

    /// The pid in a node root's name, `skynet-node-<pid>-XXXXXX`.
    static func pid(ofRoot name: String) -> Int32? {
        let parts = name.dropFirst("skynet-node-".count).split(separator: "-")
        return parts.first.flatMap { Int32($0) }
    }

    /// Polls `holds` every `interval` until it is true or `timeout` passed; returns whether it became true.
    static func poll(within timeout: Duration, every interval: Duration = .milliseconds(20), _ holds: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !holds() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: interval)
        }
        return true
    }

    /// The entries of `tree` (a `RandomFiles.tree` listing) that name a `.part` file.
    static func partFiles(_ tree: Set<String>) -> [String] {
        tree.filter { $0.contains(".part") }.sorted()
    }

    /// The size of every regular file under `folder` whose name is `name`, found by walking it
    /// (links not followed); empty when there is none.
    static func sizes(of name: String, under folder: String) -> [Int] {
        RandomFiles.tree(folder).compactMap { entry -> Int? in
            guard let open = entry.range(of: " (", options: .backwards), entry.hasSuffix(")") else { return nil }
            let path = entry[..<open.lowerBound]
            guard path == name || path.hasSuffix("/" + name) else { return nil }
            return Int(entry[open.upperBound...].dropLast())
        }
    }
}

/// Watches a folder while something runs: whether a node root ever appeared in it (so that a
/// test's "the nodes left nothing there" is not true only because they never used it).
final class RootWatcher: Sendable {
    private let seen = Locked(false)
    private let task: Task<Void, Never>

    init(_ folder: String) {
        let seen = self.seen
        task = Task {
            while !Task.isCancelled, !seen.withLock({ $0 }) {
                if !TransferHarness.nodeRoots(in: folder).isEmpty { seen.withLock { $0 = true } }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Stops watching; whether a root was seen.
    func stop() -> Bool {
        task.cancel()
        return seen.withLock { $0 }
    }

    deinit { task.cancel() }
}
