import Foundation
@testable import SkyNet
@testable import SkyNetRuntime

/// A folder of its own for one test, removed by `body`'s end on every path.
func withScratchFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-output-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

/// Writes `lines` (each ended by a newline) to `name` in `folder` and returns its path.
func writeLines(_ lines: [String], to folder: URL, named name: String) throws -> String {
    let path = folder.appendingPathComponent(name).path
    try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
    return path
}

/// Runs `skynet` to the end with its stdout sent to `stdout` and its stderr kept, killing it
/// after `limit`.
func runSkynet(_ arguments: [String], stdout: ChildProcess.Output, in folder: URL, limit: Duration = .seconds(60)) async throws -> Finished {
    let errPath = folder.appendingPathComponent("stderr-\(UUID().uuidString)").path
    var options = ChildProcess.Options(arguments: arguments, environment: ProcessInfo.processInfo.environment)
    options.stdout = stdout
    options.stderr = .file(errPath, append: false)
    options.workingDirectory = folder.path
    let child = try ChildProcess.spawn(skynetBinary.path, options)
    do {
        _ = try await withTimeout(limit) { await child.exit.value }
    } catch {
        await child.stop(grace: .zero)
        throw error
    }
    return Finished(status: await child.exit.value.status, stdout: "",
                    stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}

extension Finished {
    var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
}
