import Foundation

/// This process's resident memory, from /proc/self/status (Linux).
package enum MemoryUse {
    package struct Unavailable: Error {}

    /// Runs `body` while no other test measures this process's peak: one test's reset of the
    /// peak, or its own big allocations, would spoil another's measure (they share a process).
    /// A test that holds much memory without measuring it (hundreds of threads) runs in it too.
    package static func measuring<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await Turns.shared.acquire()
        do {
            let result = try await body()
            await Turns.shared.release()
            return result
        } catch {
            await Turns.shared.release()
            throw error
        }
    }

    /// One test at a time, the others waiting in order (suspended, not blocking a thread).
    private actor Turns {
        static let shared = Turns()
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard busy else { busy = true; return }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
    }

    /// Resets the peak (VmHWM) to the current RSS and returns it, in bytes.
    package static func resetPeak() throws -> Int {
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
        return try field("VmRSS")
    }

    /// The peak RSS since the last reset, in bytes.
    package static func peak() throws -> Int { try field("VmHWM") }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            if let kilobytes = Int(line.dropFirst(name.count + 1).filter { $0.isNumber }) { return kilobytes * 1024 }
        }
        throw Unavailable()
    }
}

extension Optional {
    package func unwrapped() throws -> Wrapped {
        guard let self else { throw MemoryUse.Unavailable() }
        return self
    }
}
