import Foundation
import SkyNet
import SkyNetRuntime

/// A finished child: exit status, peak resident memory, wall time and stdout.
struct ChildRun {
    let status: Int32
    let peakKiB: Int
    /// The most threads seen (sampled with the memory: `PeakMemory`).
    var peakThreads = 0
    let seconds: Double
    /// All of stdout (`run`), or its last bytes (`stream`: at most `tailBytes`).
    let stdout: String
    /// `stream` only: seconds from just before the spawn to the read that brought the first
    /// complete stdout line `firstLine` accepted (nil when none came), and stdout's bytes in all.
    var firstLineSeconds: Double? = nil
    var bytes = 0

    /// Runs `executable arguments…` to the end with stdout in a file, waiting on this (main)
    /// thread; the peak RSS is sampled (`PeakMemory`). A child still running after
    /// `deadline` is stopped and the run throws.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    deadline: Duration = .seconds(600)) throws -> ChildRun {
        let outPath = Children.temporary(NSTemporaryDirectory() + "skynet-bench-\(UUID().uuidString).out")
        defer { Children.remove(outPath) }
        var options = ChildProcess.Options(arguments: arguments, environment: environment)
        options.stdout = .file(outPath, append: false)
        let started = ContinuousClock.now
        let child = try ChildProcess.spawn(executable, options)
        let memory = PeakMemory(pid: child.pid)
        let ended = try awaitExit(of: child, deadline: deadline, named: executable)
        let seconds = (ContinuousClock.now - started).seconds
        let peak = memory.finish()
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        return ChildRun(status: ended.status, peakKiB: peak.kib, peakThreads: peak.threads, seconds: seconds, stdout: output)
    }

    /// Waits for `child` to exit, tracked in `Children` meanwhile (an interrupted benchmark
    /// kills it); past `deadline` it is stopped and this throws.
    static func awaitExit(of child: ChildProcess, deadline: Duration, named name: String) throws -> ChildExit {
        Children.track(child.pid)
        defer { Children.untrack(child.pid) }
        let ended = try blocking { () async -> ChildExit? in
            if let ended = try? await withTimeout(deadline, { await child.exit.value }) { return ended }
            await child.stop(grace: .seconds(1))
            return nil
        }
        guard let ended else { throw BenchError("\(name) was still running after \(deadline): stopped") }
        return ended
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}


/// Runs async work from the synchronous main thread (not a thread of the cooperative pool),
/// waiting for its outcome on the lock's condition.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Guarded<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
    }
    guard let result = outcome.wait(while: { $0 == nil }, then: { outcome, _ in outcome }) else { throw BenchError("no result") }
    return try result.get()
}

/// Writes a line to stderr.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
