import Foundation
import SkyNetLocalHosts
import SkyNetTestSupport

/// Inputs that hold their task until the test lets it go: named pipes (FIFOs), which a job
/// such as `sha256sum {}` opens and then waits on until the test writes their bytes. A scan of
/// real jobs is over in a blink; with the first inputs held, the test can see which host runs
/// which of them (both hosts have work, whatever the order of their logins) and let the scan
/// finish only then. Bounded: each FIFO takes a fixed, small payload (below a pipe's buffer).
struct FIFOGate {
    let paths: [String]
    /// The bytes each FIFO gives its reader once released.
    let payload: Data

    /// Makes `count` FIFOs in `folder` (named `held N`).
    static func make(_ count: Int, in folder: String) throws -> FIFOGate {
        let paths = try (1...count).map { index in
            let path = "\(folder)/held \(index)"
            guard mkfifo(path, 0o600) == 0 else { throw SSHScanHarness.Failure(description: "mkfifo \(path): errno \(errno)") }
            return path
        }
        return FIFOGate(paths: paths, payload: Data((0..<4096).map { _ in UInt8.random(in: 0...255) }))
    }

    /// Which of the FIFOs a process named `program` of `host` was started on (its argument).
    func held(on host: SSHTestHost, by program: String) -> Set<String> {
        var found = Set<String>()
        for process in host.processes(named: program) {
            guard let raw = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(process.pid)/cmdline")) else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            found.formUnion(arguments.filter(paths.contains))
        }
        return found
    }

    /// Writes the payload into every FIFO and closes it, so that its reader reads it to the
    /// end. A reader that is not in its `open` yet (ENXIO) is waited for, at most `timeout`.
    func release(within timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        for path in paths {
            var descriptor = open(path, O_WRONLY | O_NONBLOCK)
            while descriptor < 0, errno == ENXIO, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                descriptor = open(path, O_WRONLY | O_NONBLOCK)
            }
            guard descriptor >= 0 else { throw SSHScanHarness.Failure(description: "open \(path) for writing: errno \(errno)") }
            defer { close(descriptor) }
            // Below a pipe's 64 KiB buffer: one write fits whole into an empty pipe.
            let written = payload.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == payload.count else { throw SSHScanHarness.Failure(description: "write \(path): \(written), errno \(errno)") }
        }
    }

    /// What `sha256sum` prints for the FIFOs once released: the payload's hash and each path,
    /// in order (hashed here by `sha256sum` itself, from a file holding the payload).
    func expectedSums(scratch folder: String) async throws -> String {
        let file = folder + "/payload"
        try payload.write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let hash = try await SSHScanHarness.localSums([file]).prefix(64)
        return paths.map { "\(hash)  \($0)\n" }.joined()
    }
}
