import Foundation
import SkyNet
import SkyNetRuntime

/// The floor of W8: how fast this machine can start and reap a program at all, with nothing
/// in between (no node, no wire, no pipes): posix_spawn then waitpid, `width` at a time.
enum SpawnFloor {
    /// Runs `program input` once per input, `width` lanes each spawning and waiting in turn;
    /// returns tasks per second. Throws if a child could not start or did not exit 0.
    static func measure(program: String, inputs: [String], width: Int) throws -> Double {
        let failures = Locked(0)
        let started = ContinuousClock.now
        // Each lane blocks in waitpid: they are plain dispatch threads of this synchronous
        // benchmark, not threads of the cooperative pool.
        DispatchQueue.concurrentPerform(iterations: width) { lane in
            for index in stride(from: lane, to: inputs.count, by: width) where !spawnAndWait(program, inputs[index]) {
                failures.withLock { $0 += 1 }
            }
        }
        let seconds = (ContinuousClock.now - started).seconds
        let failed = failures.withLock { $0 }
        guard failed == 0 else { throw BenchError("spawn floor: \(failed) of \(inputs.count) runs of \(program) failed") }
        return Double(inputs.count) / seconds
    }

    /// Starts `program input`, waits for it, and says whether it exited 0.
    private static func spawnAndWait(_ program: String, _ input: String) -> Bool {
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(input), nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        guard posix_spawn(&pid, program, nil, nil, argv, environ) == 0 else { return false }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return false }
        }
        return status == 0
    }
}

/// The path of `name` on PATH, if an executable file of that name is there.
func findOnPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}
