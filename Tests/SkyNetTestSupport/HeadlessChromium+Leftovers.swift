import Foundation

extension HeadlessChromium {
    /// The processes of this browser still alive (zombies do not count): those in its process
    /// group and those whose command line names its profile folder (a helper that left the
    /// group would still carry `--user-data-dir`). Empty after `close()`. Reads /proc (Linux).
    package func remainingProcesses() -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
            // After the command name in parentheses: state, parent, process group.
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            guard fields.count > 2, fields[0] != "Z" else { return false }
            if Int32(fields[2]) == self.pid { return true }
            let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            return String(decoding: commandLine, as: UTF8.self).contains(profile)
        }
    }

    /// `remainingProcesses()` once it is empty, or what is left after `timeout`: a process
    /// killed with its group takes a moment to be gone (seen: one still listed right after
    /// `close()` on a loaded machine).
    package func processesLeft(within timeout: Duration) async -> [Int32] {
        let deadline = ContinuousClock.now + timeout
        var left = remainingProcesses()
        while !left.isEmpty, ContinuousClock.now < deadline {
            // Polling /proc: the state awaited is the kernel's, nothing can signal it.
            try? await Task.sleep(for: .milliseconds(50))
            left = remainingProcesses()
        }
        return left
    }
}
