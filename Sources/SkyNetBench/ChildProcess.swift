import Foundation
import SkyNet
#if canImport(Glibc)
import Glibc
#endif

/// A finished child: exit status, peak resident memory and wall time.
struct ChildRun {
    let status: Int32
    let peakKiB: Int
    let seconds: Double
    let stdout: String
}

enum ChildProcess {
    /// Runs `executable arguments…` to the end with stdout in a file, blocking this (main)
    /// thread, and reads its peak RSS from wait4's rusage.
    static func run(_ executable: String, _ arguments: [String]) throws -> ChildRun {
        let outPath = NSTemporaryDirectory() + "skynet-bench-\(UUID().uuidString).out"
        defer { unlink(outPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = ContinuousClock.now
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("posix_spawn \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = (ContinuousClock.now - started).seconds
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        return ChildRun(status: status, peakKiB: usage.ru_maxrss, seconds: seconds, stdout: output)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}


/// Runs async work from the synchronous main thread (not a thread of the cooperative pool),
/// waiting for it on a semaphore.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Locked<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    guard let result = outcome.withLock({ $0 }) else { throw BenchError("no result") }
    return try result.get()
}

/// Writes a line to stderr.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
