import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

/// The default capacity of `skynet node --stdio` is the processors it may run on: its CPU
/// affinity mask (what `nproc` and `taskset` go by), not every processor online.
@Suite(.timeLimit(.minutes(1)))
struct CoreCountTests {
    @Test func theCoreCountIsWhatNprocSays() async throws {
        var options = ChildProcess.Options()
        options.stdout = .lines(keep: 10)
        let nproc = try ChildProcess.spawn("/usr/bin/nproc", options)
        _ = try await withTimeout(.seconds(20)) { await nproc.exit.value }
        await nproc.stdoutLines?.closed()
        let said = try #require(Int(nproc.stdoutLines?.lines.first ?? ""))
        #expect(CoreCount.online() == said)
        #expect(CoreCount.online(atMost: 1) == 1)
    }

    /// A thread bound to one processor (the mask is a thread's, and what it starts inherits
    /// it) counts one, however many are online.
    @Test func aThreadBoundToOneProcessorCountsOne() async throws {
        let counted = try await onOwnThread(named: "test-affinity") { () -> Int? in
            guard let first = Self.allowedProcessors().first else { return nil }
            var mask = cpu_set_t()
            withUnsafeMutableBytes(of: &mask) { $0[first / 8] = 1 << UInt8(first % 8) }
            guard let set = Affinity.set, set(0, MemoryLayout<cpu_set_t>.size, &mask) == 0 else { return nil }
            return CoreCount.online()  // the thread ends with its mask
        }
        #expect(counted == 1)
    }

    /// The processors this thread may run on, by number.
    static func allowedProcessors() -> [Int] {
        var mask = cpu_set_t()
        guard let get = Affinity.get, get(0, MemoryLayout<cpu_set_t>.size, &mask) == 0 else { return [] }
        return withUnsafeBytes(of: &mask) { bytes in
            bytes.indices.flatMap { index in (0..<8).filter { bytes[index] & (1 << $0) != 0 }.map { index * 8 + $0 } }
        }
    }
}

/// `sched_getaffinity` and `sched_setaffinity`, which Swift's Glibc module hides (_GNU_SOURCE).
private enum Affinity {
    typealias Function = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> Int32
    static let get = function("sched_getaffinity"), set = function("sched_setaffinity")

    static func function(_ name: String) -> Function? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: Function.self) }
    }
}
