import Foundation
import Testing
@testable import SkyNet
@testable import SkyNetRuntime

extension Trait where Self == OwnThreadTrait {
    /// Runs each test (each case of a parameterized one) on a thread of its own instead of
    /// the cooperative pool. For tests that compute for long without suspending (fuzzing,
    /// hashing megabytes, millions of inserts): on a two-core machine the pool has two
    /// threads, and two such tests, started at once with every other suite, held both for
    /// tens of seconds under the thread sanitizer, so that timing tests elsewhere waited ten
    /// seconds for work of microseconds. On a thread of its own the work is shared out by
    /// the kernel instead, and the pool stays free.
    package static var onOwnThread: OwnThreadTrait { OwnThreadTrait() }
}

/// See `Trait.onOwnThread`. The test keeps its task (and with it `#expect` and the test's
/// task-local state): only the executor its nonisolated code runs on changes.
package struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreadTrait? {
        testCase == nil ? nil : self
    }

    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await OwnThreadGate.shared.enter()
        do {
            let executor = ThreadTaskExecutor(name: "test-own-thread")
            defer { executor.finish() }
            try await withTaskExecutorPreference(executor) { try await function() }
        } catch {
            await OwnThreadGate.shared.leave()
            throw error
        }
        await OwnThreadGate.shared.leave()
    }
}

/// At most four tests on threads of their own at once; the others wait their turn, suspended.
///
/// Every suite starts at once, and with a thread per test that was a burst of over a hundred
/// threads. Under the thread sanitizer they all queued in the Swift runtime's one-time set-up
/// of generic metadata (`once_slow` in `getCache`, seen with gdb), the pool's own threads with
/// them: nothing else in the process ran for tens of seconds, with the CPU mostly idle, and
/// unrelated tests of time (TimeoutTask, keep-alives, the slowloris cut) failed together.
package actor OwnThreadGate {
    package static let shared = OwnThreadGate(limit: 4)
    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    package init(limit: Int) { self.limit = limit }

    package func enter() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }  // `leave` hands its place over
    }

    package func leave() {
        if waiting.isEmpty { running -= 1 } else { waiting.removeFirst().resume() }
    }
}

/// A task executor that runs the jobs given to it, in order, on one thread of its own. The
/// thread ends once `finish()` was called and its queue is empty; a job that arrives after
/// that still runs, on a thread started for it.
package final class ThreadTaskExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var finished = false
        var threadRunning = true
    }

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let name: String

    package init(name: String) {
        self.name = name
        startThread(named: name) { [self] in runJobs() }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLock { state -> Bool in
            guard state.threadRunning else { return false }
            state.jobs.append(job)
            return true
        }
        if queued {
            wake.signal()
        } else {
            startThread(named: name) { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }

    /// Lets the thread end once it has run every job queued so far.
    package func finish() {
        state.withLock { $0.finished = true }
        wake.signal()
    }

    private func runJobs() {
        while true {
            wake.wait()
            let next = state.withLock { state -> UnownedJob?? in
                if !state.jobs.isEmpty { return .some(state.jobs.removeFirst()) }
                if state.finished {
                    state.threadRunning = false
                    return .none
                }
                return .some(nil)
            }
            switch next {
            case .none: return
            case .some(nil): continue
            case .some(let job?): job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }
}
