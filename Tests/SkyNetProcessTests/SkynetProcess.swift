import Foundation
@testable import SkyNet
@testable import SkyNetRuntime

/// The `skynet` executable that `swift build` put beside the test bundle (or `$SKYNET_BIN`).
let skynetBinary: URL = {
    if let path = ProcessInfo.processInfo.environment["SKYNET_BIN"] { return URL(fileURLWithPath: path) }
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var folder = bundle.deletingLastPathComponent()
    // On Linux the test bundle is an executable in the build folder; on macOS a bundle in it.
    while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("skynet").path),
          folder.pathComponents.count > 1 {
        folder = folder.deletingLastPathComponent()
    }
    return folder.appendingPathComponent("skynet")
}()

/// What a finished `skynet` process left behind.
struct Finished: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// Runs `skynet` with `arguments` to the end, killing it after `limit`.
func runSkynet(_ arguments: [String], limit: Duration = .seconds(60), environment: [String: String?] = [:]) async throws -> Finished {
    try await runProgram(skynetBinary.path, arguments, limit: limit, environment: environment)
}

/// Runs a program to the end in a fresh folder, killing it after `limit`; `environment`
/// adds (or, with nil, removes) variables.
func runProgram(_ path: String, _ arguments: [String], limit: Duration = .seconds(60), environment: [String: String?] = [:]) async throws -> Finished {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outPath = folder.appendingPathComponent("out").path, errPath = folder.appendingPathComponent("err").path

    var variables = ProcessInfo.processInfo.environment
    for (name, value) in environment { variables[name] = value }
    var options = ChildProcess.Options(arguments: arguments, environment: variables)
    options.stdout = .file(outPath, append: false)
    options.stderr = .file(errPath, append: false)
    options.workingDirectory = folder.path
    let child = try ChildProcess.spawn(path, options)
    do {
        _ = try await withTimeout(limit) { await child.exit.value }
    } catch {
        await child.stop(grace: .zero)
        throw error
    }
    return Finished(
        status: await child.exit.value.status,
        stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}
