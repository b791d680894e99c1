import Foundation
@testable import SkyNet
@testable import SkyNetRuntime

/// A `skynet` process running in the background whose stdout (and stderr) lines the test can
/// wait for; killed when it is dropped.
final class RunningProcess: Sendable {
    private let child: ChildProcess

    /// Starts `program` (default: `skynet`) with `arguments`; `environment` adds to ours.
    init(_ arguments: [String], environment: [String: String] = [:], program: String = skynetBinary.path) throws {
        var options = ChildProcess.Options(
            arguments: arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        options.stdout = .lines(keep: 1_000_000)
        options.stderr = .lines(keep: 100_000)
        child = try ChildProcess.spawn(program, options)
    }

    var lines: [String] { child.stdoutLines?.lines ?? [] }
    var errorLines: [String] { child.stderrLines?.lines ?? [] }
    var pid: Int32 { child.pid }

    /// Waits for a stdout line that satisfies `predicate` (one already printed counts). The
    /// predicate runs under the output's lock: it must not read `lines`.
    @discardableResult
    func waitForLine(timeout: Duration = .seconds(30), where predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
        try await Self.wait(for: child.stdoutLines, timeout: timeout, predicate, lines: { self.lines })
    }

    /// Waits for a stderr line that satisfies `predicate`, as `waitForLine` does for stdout.
    @discardableResult
    func waitForErrorLine(timeout: Duration = .seconds(30), where predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
        try await Self.wait(for: child.stderrLines, timeout: timeout, predicate, lines: { self.errorLines })
    }

    private static func wait(
        for log: LineLog?, timeout: Duration, _ predicate: @escaping @Sendable (String) -> Bool, lines: () -> [String]
    ) async throws -> String {
        guard let log, let line = try await withTimeout(timeout, { await log.first(where: predicate) }) else {
            throw ProcessEnded(lines: lines())
        }
        return line
    }

    /// Waits until `count` stdout lines (printed before or after the call) satisfy `predicate`.
    func waitForLines(_ count: Int, timeout: Duration = .seconds(30), where predicate: @escaping @Sendable (String) -> Bool) async throws {
        let seen = Locked(0)
        try await waitForLine(timeout: timeout) { line in
            predicate(line) && seen.withLock { seen in
                seen += 1
                return seen >= count
            }
        }
    }

    /// Waits for the process to exit (killing it after `timeout`) and returns what it printed.
    func finish(timeout: Duration = .seconds(60)) async throws -> Finished {
        let child = self.child
        do {
            _ = try await withTimeout(timeout) { await child.exit.value }
            // The output is complete when the pipes close.
            _ = try await withTimeout(.seconds(10)) {
                await child.stdoutLines?.closed()
                await child.stderrLines?.closed()
            }
        } catch {
            kill()
            throw error
        }
        return Finished(status: await child.exit.value.status, stdout: lines.joined(separator: "\n"),
                        stderr: errorLines.joined(separator: "\n"))
    }

    func send(_ signal: Int32) { child.send(signal) }

    /// Kills the process (if it still runs).
    func kill() {
        send(SIGCONT)
        send(SIGKILL)
    }

    deinit {
        child.send(SIGKILL)
    }
}

struct ProcessEnded: Error, CustomStringConvertible {
    let lines: [String]
    var description: String { "the process ended without the awaited line; it printed:\n" + lines.joined(separator: "\n") }
}
