import Foundation
@testable import SkyNet

/// Lines as they arrive from a process, awaited by tests.
final class LineLog: Sendable {
    private struct State {
        var lines: [String] = []
        var waiters: [(predicate: @Sendable (String) -> Bool, signal: AsyncSignal<String?>)] = []
        var closed = false
    }

    private let state = Locked(State())

    var lines: [String] { state.withLock { $0.lines } }

    func append(_ line: String) {
        let matched = state.withLock { state -> [AsyncSignal<String?>] in
            state.lines.append(line)
            // Each predicate runs once per line: a counting predicate must not be asked twice.
            var matching: [AsyncSignal<String?>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(line) else { return false }
                matching.append(waiter.signal)
                return true
            }
            return matching
        }
        for signal in matched { signal.fulfil(line) }
    }

    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters.map(\.signal)
        }
        for signal in waiting { signal.fulfil(nil) }
    }

    /// The first line (already seen or still to come) that satisfies `predicate`; nil if the
    /// output closes first.
    func first(where predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        let signal = AsyncSignal<String?>()
        let early: String?? = state.withLock { state in
            if let line = state.lines.first(where: predicate) { return .some(line) }
            if state.closed { return .some(nil) }
            state.waiters.append((predicate, signal))
            return nil
        }
        if let early { return early }
        return await signal.value
    }
}

/// A `skynet` process running in the background whose stdout lines the test can wait for.
final class RunningProcess: Sendable {
    // Process is touched only to start it and to send it signals.
    private let process: Process
    private let output = LineLog()
    private let exit: ProcessExit
    private let errorFile: URL

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = skynetBinary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errorFile)
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        exit = ProcessExit(process)
        try process.run()
        let reader = pipe.fileHandleForReading
        let thread = Thread { [output] in
            var partial = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                partial.append(chunk)
                while let newline = partial.firstIndex(of: 10) {
                    output.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
                    partial = Data(partial[(newline + 1)...])
                }
            }
            output.close()
        }
        thread.start()
    }

    var lines: [String] { output.lines }
    var pid: Int32 { process.processIdentifier }

    /// Waits for a stdout line that satisfies `predicate` (one already printed counts). The
    /// predicate runs under the output's lock: it must not read `lines`.
    @discardableResult
    func waitForLine(timeout: Duration = .seconds(30), where predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
        let output = self.output
        guard let line = try await withTimeout(timeout, { await output.first(where: predicate) }) else {
            throw ProcessEnded(lines: lines)
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
        let exit = self.exit, output = self.output
        do {
            _ = try await withTimeout(timeout) { await exit.status }
            // The output is complete when the pipe closes.
            _ = try await withTimeout(.seconds(10)) { await output.first { _ in false } }
        } catch {
            kill()
            throw error
        }
        return Finished(status: await exit.status, stdout: lines.joined(separator: "\n"),
                        stderr: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "")
    }

    func send(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    /// Kills the process (if it still runs) and waits for it.
    func kill() {
        send(SIGCONT)
        send(SIGKILL)
    }

    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: errorFile)
    }
}

struct ProcessEnded: Error, CustomStringConvertible {
    let lines: [String]
    var description: String { "the process ended without the awaited line; it printed:\n" + lines.joined(separator: "\n") }
}
