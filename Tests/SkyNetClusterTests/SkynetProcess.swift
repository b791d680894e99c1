import Foundation
@testable import SkyNet

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

/// Runs a program to the end, killing it after `limit`; `environment` adds (or, with nil,
/// removes) variables.
func runProgram(_ path: String, _ arguments: [String], limit: Duration = .seconds(60), environment: [String: String?] = [:]) async throws -> Finished {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outURL = folder.appendingPathComponent("out"), errURL = folder.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)

    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.currentDirectoryURL = folder
    var variables = ProcessInfo.processInfo.environment
    for (name, value) in environment { variables[name] = value }
    process.environment = variables
    process.standardOutput = try FileHandle(forWritingTo: outURL)
    process.standardError = try FileHandle(forWritingTo: errURL)
    process.standardInput = FileHandle.nullDevice
    let exited = ProcessExit(process)
    try process.run()
    do {
        _ = try await withTimeout(limit) { await exited.status }
    } catch {
        process.terminate()
        kill(process.processIdentifier, SIGKILL)
        _ = await exited.status
        throw error
    }
    return Finished(
        status: await exited.status,
        stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

/// Awaits a process's exit status without blocking a thread.
final class ProcessExit: Sendable {
    private let exit = AsyncSignal<Int32>()

    init(_ process: Process) {
        process.terminationHandler = { [exit] process in exit.fulfil(process.terminationStatus) }
    }

    var status: Int32 { get async { await exit.value } }
}

