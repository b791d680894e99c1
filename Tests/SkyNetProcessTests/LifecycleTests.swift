import Foundation
@testable import SkyNet
@testable import SkyNetCluster
@testable import SkyNetRuntime
import SkyNetTestSupport
import Testing

extension ProcessTests {
    /// Spawned nodes never outlive their coordinator, however it ends.
    @Suite struct OrphanTests {
        private func startScan() throws -> (RunningProcess, URL) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("skynet-orphans-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("cluster.json")
            try #"{"nodes":[]}"#.write(to: file, atomically: true, encoding: .utf8)
            let scan = try RunningProcess(["scan", "--cluster", file.path, "--spawn", "2", "--total", "40", "--duration", "1"])
            return (scan, folder)
        }

        @Test func spawnedNodesExitWhenTheirCoordinatorIsKilled() async throws {
            let (scan, folder) = try startScan()
            defer { scan.kill(); try? FileManager.default.removeItem(at: folder) }
            try await scan.waitForLine { $0.hasPrefix("Completed: ") }
            let nodes = childProcesses(of: scan.pid)
            defer { for pid in nodes { kill(pid, SIGKILL) } }
            #expect(nodes.count == 2)
            scan.send(SIGKILL)
            #expect(try await scan.finish(timeout: .seconds(10)).status == SIGKILL)
            #expect(try await allGone(nodes, within: .seconds(3)))
        }

        @Test func spawnedNodesExitOnASecondCtrlC() async throws {
            let (scan, folder) = try startScan()
            defer { scan.kill(); try? FileManager.default.removeItem(at: folder) }
            try await scan.waitForLine { $0.hasPrefix("Completed: ") }
            let nodes = childProcesses(of: scan.pid)
            defer { for pid in nodes { kill(pid, SIGKILL) } }
            #expect(nodes.count == 2)
            scan.send(SIGINT)
            try await scan.waitForErrorLine { $0.contains("Stopping") }
            scan.send(SIGINT)
            #expect(try await scan.finish(timeout: .seconds(10)).status == 128 + SIGINT)
            #expect(try await allGone(nodes, within: .seconds(3)))
        }
    }
}

/// The pids whose parent is `parent`, from /proc.
func childProcesses(of parent: Int32) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 1 else { return false }
        return Int32(fields[1]) == parent
    }
}

/// Whether a process is alive: it exists and is not a zombie.
func isAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let state = stat.split(separator: ")").last?.split(separator: " ").first else { return false }
    return state != "Z"
}

/// Polls /proc until none of `pids` is alive; false if some still is after `limit`.
func allGone(_ pids: [Int32], within limit: Duration) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while pids.contains(where: isAlive) {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(20))
    }
    return true
}
