import Foundation
@testable import SkyNetRuntime
@testable import SkyNetWork

/// Named pipes (FIFOs) in a scratch folder that hold a `cat {}` job's task until the test
/// releases them: the job blocks in `open` until a writer comes. Removed by `remove()`.
package struct DrainGate: Sendable {
    package let folder: String
    package let paths: [String]

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    package static func make(_ count: Int) throws -> DrainGate {
        let folder = NSTemporaryDirectory() + "skynet-drain-gate-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let paths = try (1...count).map { index in
            let path = "\(folder)/held-\(index)"
            guard mkfifo(path, 0o600) == 0 else { throw Failure(description: "mkfifo \(path): errno \(errno)") }
            return path
        }
        return DrainGate(folder: folder, paths: paths)
    }

    /// The job a node runs on a gate's FIFO: its result is the FIFO's text.
    package static func register(in jobs: inout JobRegistry) throws {
        try jobs.register("hold", CommandJob(name: "hold", command: CommandTemplate("cat {}"), killGrace: .seconds(2)))
    }

    /// The task that holds on FIFO `index`.
    package func task(_ index: Int) -> ScanTask {
        ScanTask(input: index, job: "hold", text: paths[index])
    }

    /// Writes `released INDEX` into FIFO `index` and closes it; a reader not in its `open`
    /// yet (ENXIO) is waited for, at most `timeout`. On a thread of its own (it polls).
    package func release(_ index: Int, within timeout: Duration = .seconds(10)) async throws {
        let path = paths[index]
        try await onOwnThread(named: "test-gate") { () throws in
            let deadline = ContinuousClock.now + timeout
            var descriptor = open(path, O_WRONLY | O_NONBLOCK)
            while descriptor < 0, errno == ENXIO, ContinuousClock.now < deadline {
                usleep(10_000)
                descriptor = open(path, O_WRONLY | O_NONBLOCK)
            }
            guard descriptor >= 0 else { throw Failure(description: "open \(path) for writing: errno \(errno)") }
            defer { close(descriptor) }
            let bytes = Array("released \(index)".utf8)
            guard write(descriptor, bytes, bytes.count) == bytes.count else { throw Failure(description: "write \(path): errno \(errno)") }
        }
    }

    package func remove() {
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// `operation`'s value, or nil when it took longer than `limit`.
package func within<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async -> T) async -> T? {
    try? await withTimeout(limit) { await operation() }
}
