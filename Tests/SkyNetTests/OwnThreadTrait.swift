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
    static var onOwnThread: OwnThreadTrait { OwnThreadTrait() }
}

/// See `Trait.onOwnThread`. The test keeps its task (and with it `#expect` and the test's
/// task-local state): only the executor its nonisolated code runs on changes.
struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreadTrait? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let executor = ThreadTaskExecutor(name: "test-own-thread")
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

/// A task executor that runs the jobs given to it, in order, on one thread of its own. The
/// thread ends once `finish()` was called and its queue is empty; a job that arrives after
/// that still runs, on a thread started for it.
final class ThreadTaskExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var finished = false
        var threadRunning = true
    }

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let name: String

    init(name: String) {
        self.name = name
        startThread(named: name) { [self] in runJobs() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
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
    func finish() {
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
